"""fedbench.engine"""
