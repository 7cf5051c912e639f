"""Survey system for sensitive questions: randomized in the browser, debiased with honest intervals."""
