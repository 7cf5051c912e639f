"""Results and exports: comparisons, live intervals, number summaries, and every file a researcher
downloads.
"""
