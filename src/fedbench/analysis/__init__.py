"""fedbench.analysis"""
