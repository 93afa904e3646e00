"""fedbench.theory"""
