"""Software prefetch for the compiled (numba) kernels: start loading an array element's cache line
now, to read it later without waiting.

The FedAc regime reads a few random rows of the training set per client-step (a9a: a row is 14
non-zeros, 3 to 5 cache lines in ``indptr``, ``indices``, ``values`` and the labels), and the rows
of one step are known before the step runs: they come from a keyed draw, not from the model. On
the machines we measured, a dependent load that misses the last-level cache costs ~130 ns
(benchmarks/RESULTS.md), as much as the work of a row at a few lanes, and the chain
row → ``indptr`` → ``indices`` → parameters is three of them. :func:`prefetch` lets a kernel
request the lines of rows it will read a few rows later, so the loads overlap the work.

It emits LLVM's ``llvm.prefetch`` intrinsic (read, locality 3: keep in all cache levels, data
cache); a prefetch never faults and changes no value, so results are bitwise those without it.
"""

from __future__ import annotations

from llvmlite import ir
from numba.core import cgutils, types
from numba.extending import intrinsic


@intrinsic
def prefetch(typingctx, arr, index):
    """Hint that ``arr[index]`` (a 1-d array, an integer index) will be read soon.

    Compiled code only (call it from a ``numba.njit`` function). ``index`` is not bounds-checked
    and not wrapped (a negative index addresses before the array): a prefetch of any address is
    harmless, but a useless one costs a load slot, so callers pass valid indices.

    Raises:
        numba.core.errors.TypingError: at compile time, when ``arr`` is not a 1-d array or
            ``index`` not an integer.
    """
    if not (isinstance(arr, types.Array) and arr.ndim == 1 and isinstance(index, types.Integer)):
        return None

    def codegen(context, builder, signature, args):
        aryty = signature.args[0]
        ary = context.make_array(aryty)(context, builder, args[0])
        ptr = cgutils.get_item_pointer(context, builder, aryty, ary, [args[1]], wraparound=False)
        i8p, i32 = ir.IntType(8).as_pointer(), ir.IntType(32)
        fnty = ir.FunctionType(ir.VoidType(), [i8p, i32, i32, i32])
        fn = cgutils.get_or_insert_function(builder.module, fnty, "llvm.prefetch.p0")
        builder.call(fn, [builder.bitcast(ptr, i8p), i32(0), i32(3), i32(1)])  # read, keep, data
        return context.get_dummy_value()

    return types.void(arr, index), codegen
