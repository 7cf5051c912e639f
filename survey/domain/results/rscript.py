"""An R script, made for one survey, that redoes the project's estimates from the microdata.

A researcher who re-analyses our exports should not have to trust our numbers: this script needs
base R only (no package), reads ``<slug>-responses.csv``, carries the survey's frozen design matrices
(in the microdata's coding: yes = 1, no = 0) and computes, per question and option, exactly what the
estimates file holds: n, the reported counts, the unbiased estimate ``Q⁻¹ λ̂``, the consistent
(maximum-likelihood) estimate, its standard error, and the default 95% interval (the floored Wilson
interval mapped through the design) where the design allows it; for a number question, the mean, its
standard error and the betting interval over the question's range, computed as
:func:`survey.privacy.bounded.mean_interval` does (the same bets, caps and threshold, each end found by
``uniroot`` between the range's edge and the mean); for a randomized number, the mean of its reports
(each in the question's units) with its mechanism's interval, the betting interval over the report
grid's ends (:meth:`survey.privacy.numeric.NumberMechanism.estimate`) or Laplace's normal interval.
It prints a table with the same
columns as ``<slug>-estimates.csv`` so the two can be compared line by line; tests run it with
Rscript and hold its output to the app's to 1e-6.

The script is pure ASCII, and every text in it that came from an organizer (an option label, a key,
the slug) is a string literal made only of letters, digits, spaces, harmless punctuation and
``\\u{...}`` escapes. R reads a script in the encoding of its locale, and in GBK, GB18030, Big5 or
Shift-JIS the byte ``0x5C`` (a backslash in ASCII) is also the second byte of many two-byte
characters: a label whose UTF-8 bytes, read as GBK, ended in such a lead byte used to swallow the
backslash that escaped the quote after it, close the string and run the rest of the label as code.
ASCII bytes mean the same in every encoding R may run in, and a ``\\u`` escape always means its
Unicode character, so no label can be anything but data, whatever the locale (tests run the script
under each of those locales with hostile labels). The output CSV is written as UTF-8 by the script
itself (``write.csv`` would go through the locale's encoding and lose what it cannot show), with its
text cells neutralized against spreadsheet formulas as every CSV of the project is.
"""

from __future__ import annotations

import math

from survey.domain.models import Question, Survey
from survey.domain.results.coding import researcher_matrix, researcher_options
from survey.domain.results.csvfile import FORMULA_STARTS
from survey.domain.surveys.variable_names import variable_names
from survey.privacy.numeric import GRID_STEPS

#: The characters an R string literal may hold as they are: printable ASCII but the quote and the
#: backslash. Everything else is written as a ``\\u{...}`` escape.
_PLAIN = frozenset(chr(c) for c in range(0x20, 0x7F)) - {'"', "\\"}

#: What R cannot hold in a string (NUL) or has no character for (a lone surrogate): neither can be
#: stored (survey.domain.validation refuses them), but the script must parse whatever it is given.
_REPLACEMENT = "\\u{fffd}"


def _r_escape(ch: str) -> str:
    code = ord(ch)
    if code == 0 or 0xD800 <= code <= 0xDFFF:
        return _REPLACEMENT
    return f"\\u{{{code:04x}}}" if code <= 0xFFFF else f"\\U{{{code:08x}}}"


def _r_string(text: str) -> str:
    """A double-quoted R string literal in pure ASCII that means ``text`` in every locale."""
    return '"' + "".join(ch if ch in _PLAIN else _r_escape(ch) for ch in text) + '"'


def _r_comment(text: str) -> str:
    """``text`` for a comment line: printable ASCII only (anything else becomes ``?``)."""
    return "".join(ch if " " <= ch <= "~" else "?" for ch in text)


def _r_matrix(rows: list[list[float]]) -> str:
    k = len(rows)
    cells = ", ".join(repr(float(x)) for row in rows for x in row)
    return f"matrix(c({cells}), nrow = {k}, byrow = TRUE)"


def _r_question(q: Question, variable: str) -> str:
    names = f"key = {_r_string(q.key)}, variable = {_r_string(variable)}"
    if q.kind_entry.randomized_number:
        mechanism = q.mechanism()
        if math.isfinite(mechanism.bound):  # the betting interval over the report grid's ends
            low, high = (float(v) for v in mechanism.value_of([0, GRID_STEPS]))
            return f"  list({names}, reports = TRUE, low = {low!r}, high = {high!r})"
        return f"  list({names}, reports = TRUE, normal = TRUE)"  # Laplace: no bound, the normal interval
    if q.is_number:
        return f"  list({names}, number = TRUE, minimum = {q.minimum}, maximum = {q.maximum})"
    options = researcher_options(q)
    labels = ", ".join(_r_string(o["label"]) for o in options)
    if q.design is not None:
        matrix = _r_matrix(researcher_matrix(q, q.design.matrix))
    else:
        matrix = f"diag({len(options)})"
    randomized = "TRUE" if q.is_randomized else "FALSE"
    return f"  list({names}, labels = c({labels}), Q = {matrix}, randomized = {randomized})"


SCRIPT_BODY = r"""
# Unbiased estimate, consistent (maximum-likelihood) estimate, standard errors and the default 95%
# interval, as in docs/exports.md ("Estimates (CSV)"). Rows of Q are reported codes, columns true codes.
level <- 0.95
floor_factor <- 1.4         # the Wilson interval contains the Clopper-Pearson interval at 1 - 1.4 * (1 - level)
floor_count_limit <- 2000   # ... checked while the smaller of the two counts is below this

wilson <- function(x, n, level) {
  z <- qnorm(1 - (1 - level) / 2)
  p <- x / n
  z2n <- z^2 / n
  centre <- (p + z2n / 2) / (1 + z2n)
  half <- z / (1 + z2n) * sqrt(p * (1 - p) / n + z2n / (4 * n))
  c(if (x <= 0) 0 else min(max(centre - half, 0), 1), if (x >= n) 1 else min(max(centre + half, 0), 1))
}

clopper_pearson <- function(x, n, level) {
  tail <- (1 - level) / 2
  c(if (x <= 0) 0 else qbeta(tail, x, n - x + 1), if (x >= n) 1 else qbeta(1 - tail, x + 1, n - x))
}

floored_wilson <- function(x, n, level) {
  w <- wilson(x, n, level)
  if (min(x, n - x) >= floor_count_limit) return(w)
  cp <- clopper_pearson(x, n, 1 - floor_factor * (1 - level))
  c(min(w[1], cp[1]), max(w[2], cp[2]))
}

# (a, b) with P(report = v) = a * share(v) + b, when every other true answer reports v equally often
affine <- function(Q, v) {
  others <- Q[v, -v]
  if (diff(range(others)) > 1e-12) return(NULL)
  b <- mean(others)
  a <- Q[v, v] - b
  if (abs(a) < 1e-12) return(NULL)
  c(a, b)
}

# maximum likelihood over shares >= 0 that sum to 1: EM (slow near the edge, hence many steps)
simplex_mle <- function(Q, lambda, start) {
  p <- pmax(start, 1e-12); p <- p / sum(p)
  for (i in 1:200000) {
    fitted <- as.vector(Q %*% p)
    nxt <- p * as.vector(t(Q) %*% ifelse(lambda > 0, lambda / fitted, 0))
    nxt <- nxt / sum(nxt)
    if (max(abs(nxt - p)) < 1e-15) { p <- nxt; break }
    p <- nxt
  }
  p
}

# The betting interval for the mean of numbers in [low, high] (Waudby-Smith & Ramdas 2024), as
# survey.privacy.bounded.mean_interval: it holds for every distribution in the range and every n.
# Answers are scaled to z in [0, 1]; for a candidate mean m, a gambler betting that the mean is above m
# has wealth prod(1 + lambda * (z - m)), averaged over a fixed grid of bets; the lower end is the m
# where that evidence falls to 2 / (1 - level), the upper end the same for 1 - z.
bet_spacing <- 1.45   # successive bets differ by this factor
bet_span <- 10        # the largest bet over the smallest
bet_cap <- 0.999      # no bet stakes more than this share of what it could lose

bet_grid <- function(n, level) {
  first <- sqrt(2 * log(2 / (1 - level)) / (n * 0.25))
  first * bet_spacing^(0:ceiling(log(bet_span) / log(bet_spacing)))
}

# log of the average over the bets of prod(1 + lambda * (z - m))^counts, from the tallies
log_wealth <- function(z, counts, m, bets) {
  logs <- as.vector(log1p(outer(bets, z - m)) %*% counts)
  top <- max(logs)
  top + log(mean(exp(logs - top)))
}

mean_interval <- function(x, low, high, level) {
  tally <- table(x)
  values <- as.numeric(names(tally))
  counts <- as.numeric(tally)
  n <- sum(counts)
  z <- (values - low) / (high - low)
  mean_z <- sum(z * counts) / n
  bets <- bet_grid(n, level)
  threshold <- log(2 / (1 - level))
  tiny <- 1e-12
  above <- function(m) log_wealth(z, counts, m, pmin(bets, bet_cap / m)) - threshold
  below <- function(m) log_wealth(1 - z, counts, 1 - m, pmin(bets, bet_cap / (1 - m))) - threshold
  # each evidence falls as m moves toward the mean, so each end is the one root between the edge and it
  lower <- if (mean_z > tiny && above(tiny) > 0) {
    uniroot(above, c(tiny, mean_z), tol = 1e-13, maxiter = 10000)$root
  } else 0
  upper <- if (mean_z < 1 - tiny && below(1 - tiny) > 0) {
    uniroot(below, c(mean_z, 1 - tiny), tol = 1e-13, maxiter = 10000)$root
  } else 1
  c(low + (high - low) * lower, low + (high - low) * upper)
}

# the estimates file's row of a number's mean, its figures still to be filled in
mean_row <- function(design, n) {
  data.frame(question_key = design$key, variable = design$variable, n = n, option_code = NA,
             option_label = "mean", reported_count = NA, observed_share = NA_real_, unbiased = NA_real_,
             consistent = NA_real_, standard_error = NA_real_, ci_low = NA_real_, ci_high = NA_real_,
             interval_method = "", stringsAsFactors = FALSE)
}

# a number question (asked directly): its mean, standard error and betting interval, as the estimates file
summarize_number <- function(design, column) {
  x <- column[!is.na(column)]
  n <- length(x)
  row <- mean_row(design, n)
  if (n == 0) return(row)
  row$unbiased <- row$consistent <- mean(x)
  if (n >= 2) row$standard_error <- sd(x) / sqrt(n)
  ends <- mean_interval(x, design$minimum, design$maximum, level)
  row$ci_low <- ends[1]
  row$ci_high <- ends[2]
  row$interval_method <- "betting"
  row
}

# a randomized number: the mean of its reports (each in the question's units, with the true number
# as its expectation) and the mechanism's interval: the betting interval over the report grid's
# ends, or for Laplace (no bound) mean +/- z * sd / sqrt(n)
summarize_reports <- function(design, column) {
  x <- column[!is.na(column)]
  n <- length(x)
  row <- mean_row(design, n)
  if (n == 0) return(row)
  row$unbiased <- row$consistent <- mean(x)
  if (isTRUE(design$normal)) {
    if (n < 2) return(row)
    half <- qnorm(0.5 + level / 2) * sd(x) / sqrt(n)
    ends <- c(mean(x) - half, mean(x) + half)
    row$interval_method <- "normal"
  } else {
    ends <- mean_interval(x, design$low, design$high, level)
    row$interval_method <- "betting"
  }
  row$ci_low <- ends[1]
  row$ci_high <- ends[2]
  row
}

estimate_question <- function(design, column) {
  if (isTRUE(design$number)) return(summarize_number(design, column))
  if (isTRUE(design$reports)) return(summarize_reports(design, column))
  Q <- design$Q
  k <- nrow(Q)
  codes <- column[!is.na(column)]
  counts <- tabulate(codes + 1, nbins = k)
  n <- sum(counts)
  rows <- data.frame(question_key = design$key, variable = design$variable, n = n, option_code = 0:(k - 1),
                     option_label = design$labels, reported_count = counts, observed_share = NA_real_,
                     unbiased = NA_real_, consistent = NA_real_, standard_error = NA_real_, ci_low = NA_real_,
                     ci_high = NA_real_, interval_method = "", stringsAsFactors = FALSE)
  if (n == 0) return(rows)
  lambda <- counts / n
  Qinv <- solve(Q)
  unbiased <- as.vector(Qinv %*% lambda)
  if (all(unbiased >= 0)) {
    consistent <- unbiased
    fitted <- lambda
  } else {
    consistent <- simplex_mle(Q, lambda, pmax(unbiased, 0))
    fitted <- as.vector(Q %*% consistent)
  }
  covariance <- Qinv %*% (diag(fitted, k) - fitted %o% fitted) %*% t(Qinv) / n
  rows$observed_share <- lambda
  rows$unbiased <- unbiased
  rows$consistent <- consistent
  rows$standard_error <- sqrt(pmax(diag(covariance), 0))
  for (v in 1:k) {
    ab <- affine(Q, v)
    if (is.null(ab)) {
      rows$interval_method[v] <- "profile-likelihood (not computed by this script: see the estimates file)"
      next
    }
    reported <- floored_wilson(counts[v], n, level)
    ends <- sort((reported - ab[2]) / ab[1])
    rows$ci_low[v] <- min(max(ends[1], 0), 1)
    rows$ci_high[v] <- min(max(ends[2], 0), 1)
    rows$interval_method[v] <- "wilson-floor-mapped"
  }
  rows
}

# The output file as the project writes its CSV files: UTF-8 whatever the locale (write.csv would
# go through the locale's encoding and turn what it cannot show into "<U+...>"), and a text cell a
# spreadsheet could take for a formula gets a leading ' (docs/exports.md).
neutralize <- function(x) {
  bare <- sub("^ +", "", x)
  risky <- vapply(bare, function(s) any(startsWith(s, formula_starts)), logical(1), USE.NAMES = FALSE)
  ifelse(risky, paste0("'", x), x)
}
csv_cells <- function(column) {
  if (!is.character(column)) return(ifelse(is.na(column), "NA", as.character(column)))
  paste0("\"", gsub("\"", "\"\"", enc2utf8(neutralize(column)), fixed = TRUE), "\"")
}
write_utf8_csv <- function(table, path) {
  header <- paste0("\"", names(table), "\"", collapse = ",")
  lines <- c(header, do.call(paste, c(lapply(table, csv_cells), sep = ",")))
  con <- file(path, open = "wb")
  on.exit(close(con))
  writeLines(enc2utf8(lines), con, useBytes = TRUE)
}

responses <- read.csv(microdata_file, check.names = FALSE, stringsAsFactors = FALSE)
estimate_one <- function(design) {
  if (!(design$variable %in% names(responses))) {
    stop("the microdata have no column ", design$variable, " (question ", design$key, "): is this the survey's file?")
  }
  estimate_question(design, responses[[design$variable]])
}
estimates <- do.call(rbind, lapply(designs, estimate_one))
if (length(args) > 1) {
  write_utf8_csv(estimates, args[2])  # every digit, to compare with the estimates file
} else {
  print(estimates, digits = 6, row.names = FALSE)
}
invisible(estimates)
"""


def r_script(survey: Survey) -> str:
    """The R script for ``survey`` (see the module's docstring): pure ASCII, whatever the survey holds."""
    names = variable_names([q.key for q in survey.questions])
    designs = ",\n".join(_r_question(q, names[q.key]) for q in survey.questions)
    slug = _r_comment(survey.slug)
    header = (
        f"# Estimates of the survey {slug} from its randomized microdata, in base R.\n"
        f"# Usage: Rscript {slug}-estimates.R [{slug}-responses.csv [output.csv]]\n"
        "# The design matrices below are the survey's frozen designs, in the microdata's coding\n"
        "# (a yes/no question: 0 = no, 1 = yes); a question asked directly has the identity matrix, and a\n"
        "# number question is summarized by its mean, with the betting interval over its range (a\n"
        "# randomized number: the mean of its reports, over its report grid's ends). Each\n"
        '# question is found in the microdata by its variable name (docs/exports.md, "Variable names").\n'
        "# Every text is written with \\u escapes, so that the script means the same in every locale R may\n"
        "# run in.\n"
    )
    starts = ", ".join(_r_string(start) for start in FORMULA_STARTS)
    return (
        header
        + "args <- commandArgs(trailingOnly = TRUE)\n"
        + f"microdata_file <- if (length(args) > 0) args[1] else {_r_string(survey.slug + '-responses.csv')}\n\n"
        + f"designs <- list(\n{designs}\n)\n"
        + f"formula_starts <- c({starts})\n"
        + SCRIPT_BODY
    )
