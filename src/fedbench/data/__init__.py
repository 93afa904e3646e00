"""fedbench.data"""
