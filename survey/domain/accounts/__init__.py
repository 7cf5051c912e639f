"""Accounts and access: signing in, passwords, usernames, who may do what with a survey, account links
(role offers and password links), the team, the site's settings.
"""
