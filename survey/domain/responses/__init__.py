"""Responses and tallies: a submission checked and written, respondent codes, batches that unlink codes
from answers, resends, and the running counts.
"""
