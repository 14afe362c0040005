"""(being written this session)"""
__all__ = []
