"""Foundations without a model: argument validation, guards around users' objects, number formatting,
progress bars and descriptive statistics.
"""
