"""fedbench.models"""
