"""Surveys and their design: the kinds of question, specs, the builder, a survey's life, its privacy
budget and the words that explain it.
"""
