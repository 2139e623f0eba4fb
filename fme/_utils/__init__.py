"""Foundations without a model: argument validation, number formatting,
progress bars and descriptive statistics.
"""
