"""The demo: a realistic survey of sensitive questions and a few thousand simulated respondents.

Each simulated respondent has true answers drawn from stated rates, which are then randomized by
the very mechanisms stored on the questions (``Mechanism.randomize`` samples the way the browser
does; a randomized number's ``NumberMechanism.randomize`` too). The true shares among the simulated
respondents are kept on each question (a randomized number keeps their true mean), so the results
page can show them beside the estimates.
"""

from __future__ import annotations

import datetime as dt
from typing import Any

import numpy as np
from sqlalchemy import insert, select
from sqlalchemy.orm import Session

from survey.domain.models import Answer, Submission, Survey, User
from survey.domain.responses.tallies import rebuild_tallies
from survey.domain.surveys.specs import create_survey_from_spec

DEMO_SLUG = "health-and-habits"
DEMO_USER = "demo"
DEMO_PASSWORD = "demo-password"
DEMO_RESPONDENTS = 3000

DEMO_SPEC: dict[str, Any] = {
    "title": "Health and habits",
    "slug": DEMO_SLUG,
    # "introduction" is written below, from the number of questions (it once said six above seven)
    "closing_message": (
        "Thank you for taking part. The results are estimated from everyone's randomized answers together."
    ),
    # Who is asking: shown on the survey, privacy and thank-you pages.
    "run_by": "the Private Survey team",
    "contact": "privacy@example.org",
    "ethics_statement": (
        "Taking part is voluntary. By sending, you agree that your randomized answers are stored and used to "
        "estimate how common each answer is. This demo has no ethics approval."
    ),
    "questions": [
        {
            "key": "cannabis",
            "kind": "yes_no",
            "text": "In the past 12 months, have you used cannabis?",
            "privacy": {"design": "coin_flip", "truth_probability": 0.5, "yes_probability": 0.5},
            "simulated_truth": [0.18, 0.82],
        },
        {
            "key": "cheating",
            "kind": "yes_no",
            "text": "Have you ever cheated on a partner?",
            "privacy": {"design": "warner", "p": 0.75},
            "simulated_truth": [0.22, 0.78],
        },
        {
            "key": "drink_driving",
            "kind": "yes_no",
            "text": "In the past 12 months, have you driven after drinking more than the legal limit?",
            "privacy": {"design": "coin_flip", "truth_probability": 0.7, "yes_probability": 0.5},
            "simulated_truth": [0.09, 0.91],
        },
        {
            "key": "harassment",
            "kind": "yes_no",
            "text": "In the past 12 months, have you been harassed at work or in your studies?",
            "privacy": {"design": "grr", "epsilon": 2.0},
            "simulated_truth": [0.27, 0.73],
        },
        {
            "key": "sedatives",
            "kind": "choice",
            "text": "How often have you taken sleeping pills or sedatives without a prescription?",
            "options": ["Never", "Once or twice", "A few times a year", "Monthly", "Weekly or more"],
            "privacy": {"design": "grr", "epsilon": 2.0},
            "simulated_truth": [0.62, 0.15, 0.11, 0.08, 0.04],
        },
        {
            "key": "age_group",
            "kind": "direct",
            "text": "What is your age group?",
            "options": ["18–29", "30–44", "45–64", "65 or older"],
            "simulated_truth": [0.25, 0.3, 0.3, 0.15],
        },
        {
            "key": "weekly_drinks",
            "kind": "number",
            "text": "In a typical week, how many alcoholic drinks do you have?",
            "help_text": "A drink is a small glass of wine, a bottle of beer or a single measure of spirits.",
            "minimum": 0,
            "maximum": 70,
            "required": False,
        },
        {
            "key": "drinks_last_week",
            "kind": "rr_number",
            "text": "How many alcoholic drinks did you have in the last seven days?",
            "minimum": 0,
            "maximum": 30,
            "privacy": {"design": "hybrid", "epsilon": 1.0},
            "required": False,
        },
    ],
}

#: Words for the counts a demo introduction may need, in each of its languages, for a sentence that
#: begins "<count> short questions": English and Spanish from two to twelve; Arabic from three to
#: ten, where the number comes before a plural noun and takes the feminine form before the masculine
#: أسئلة (eleven and up, and one and two, are built otherwise). A count past them reads as digits.
_COUNT_WORDS = {
    "en": {
        2: "two", 3: "three", 4: "four", 5: "five", 6: "six", 7: "seven", 8: "eight", 9: "nine", 10: "ten",
        11: "eleven", 12: "twelve",
    },
    "es": {
        2: "dos", 3: "tres", 4: "cuatro", 5: "cinco", 6: "seis", 7: "siete", 8: "ocho", 9: "nueve", 10: "diez",
        11: "once", 12: "doce",
    },
    "ar": {3: "ثلاثة", 4: "أربعة", 5: "خمسة", 6: "ستة", 7: "سبعة", 8: "ثمانية", 9: "تسعة", 10: "عشرة"},
}  # fmt: skip


def count_in_words(count: int, language: str = "en") -> str:
    """``count`` as a word of ``language``, for a sentence that begins with it (digits past the table)."""
    return _COUNT_WORDS[language].get(count, str(count))


_QUESTIONS = len(DEMO_SPEC["questions"])


DEMO_SPEC["introduction"] = (
    f"{count_in_words(_QUESTIONS).capitalize()} short questions about things people often prefer not to tell."
)

#: The demo in Spanish and Arabic (docs/translations.md): the organizer's translations of each text.
DEMO_SPEC["translations"] = {
    "es": {
        "title": "Salud y hábitos",
        "introduction": (
            f"{count_in_words(_QUESTIONS, 'es').capitalize()} preguntas breves sobre cosas que la gente a menudo "
            "prefiere no contar."
        ),
        "closing_message": (
            "Gracias por participar. Los resultados se estiman a partir de las respuestas aleatorizadas de todos."
        ),
        "run_by": "el equipo de Private Survey",
        "contact": "privacy@example.org",
        "ethics_statement": (
            "La participación es voluntaria. Al enviar, acepta que sus respuestas aleatorizadas se guarden y se "
            "usen para estimar cuán común es cada respuesta. Esta demostración no tiene aprobación ética."
        ),
        "q:cannabis:text": "En los últimos 12 meses, ¿ha consumido cannabis?",
        "q:cheating:text": "¿Alguna vez ha engañado a su pareja?",
        "q:drink_driving:text": ("En los últimos 12 meses, ¿ha conducido después de beber más del límite legal?"),
        "q:harassment:text": "En los últimos 12 meses, ¿ha sufrido acoso en el trabajo o en sus estudios?",
        "q:sedatives:text": "¿Con qué frecuencia ha tomado somníferos o sedantes sin receta?",
        "q:sedatives:option:0": "Nunca",
        "q:sedatives:option:1": "Una o dos veces",
        "q:sedatives:option:2": "Algunas veces al año",
        "q:sedatives:option:3": "Cada mes",
        "q:sedatives:option:4": "Cada semana o más",
        "q:age_group:text": "¿Cuál es su grupo de edad?",
        "q:age_group:option:0": "18–29",
        "q:age_group:option:1": "30–44",
        "q:age_group:option:2": "45–64",
        "q:age_group:option:3": "65 o más",
        "q:weekly_drinks:text": "En una semana típica, ¿cuántas bebidas alcohólicas toma?",
        "q:weekly_drinks:help_text": (
            "Una bebida es una copa pequeña de vino, una botella de cerveza o una medida de licor."
        ),
        "q:drinks_last_week:text": "¿Cuántas bebidas alcohólicas tomó en los últimos siete días?",
    },
    "ar": {
        "title": "الصحة والعادات",
        "introduction": f"{count_in_words(_QUESTIONS, 'ar')} أسئلة قصيرة عن أمور يفضّل الناس غالبًا ألّا يبوحوا بها.",
        "closing_message": "شكرًا لمشاركتك. تُقدَّر النتائج من الإجابات العشوائية للجميع معًا.",
        "run_by": "فريق Private Survey",
        "contact": "privacy@example.org",
        "ethics_statement": (
            "المشاركة طوعية. بالإرسال توافق على حفظ إجاباتك العشوائية واستخدامها لتقدير مدى شيوع كل إجابة. "
            "هذا العرض التجريبي ليس له موافقة أخلاقية."
        ),
        "q:cannabis:text": "خلال الأشهر الاثني عشر الماضية، هل تعاطيت القنب؟",
        "q:cheating:text": "هل سبق أن خنت شريك حياتك؟",
        "q:drink_driving:text": "خلال الأشهر الاثني عشر الماضية، هل قدت سيارة بعد أن شربت أكثر من الحد القانوني؟",
        "q:harassment:text": "خلال الأشهر الاثني عشر الماضية، هل تعرّضت للتحرش في العمل أو الدراسة؟",
        "q:sedatives:text": "كم مرة تناولت حبوبًا منوّمة أو مهدّئات من دون وصفة طبية؟",
        "q:sedatives:option:0": "أبدًا",
        "q:sedatives:option:1": "مرة أو مرتين",
        "q:sedatives:option:2": "بضع مرات في السنة",
        "q:sedatives:option:3": "شهريًا",
        "q:sedatives:option:4": "أسبوعيًا أو أكثر",
        "q:age_group:text": "ما فئتك العمرية؟",
        "q:age_group:option:0": "18–29",
        "q:age_group:option:1": "30–44",
        "q:age_group:option:2": "45–64",
        "q:age_group:option:3": "65 أو أكثر",
        "q:weekly_drinks:text": "في أسبوع عادي، كم مشروبًا كحوليًا تتناول؟",
        "q:weekly_drinks:help_text": "المشروب كأس صغيرة من النبيذ أو زجاجة جعة أو جرعة واحدة من المشروبات الروحية.",
        "q:drinks_last_week:text": "كم مشروبًا كحوليًا تناولت في الأيام السبعة الماضية؟",
    },
}


#: The simulated respondents' true answers depend on one another as real ones would, so that the
#: compare page has something to find: a question's key → (the key it depends on, per code of that
#: question the distribution of this one's true answer). The others are drawn from their rates alone.
DEPENDENCE: dict[str, tuple[str, list[list[float]]]] = {
    "cannabis": ("age_group", [[0.32, 0.68], [0.2, 0.8], [0.12, 0.88], [0.05, 0.95]]),
    "cheating": ("cannabis", [[0.38, 0.62], [0.18, 0.82]]),
}

#: Number questions' simulated answers: key → (the question they depend on, per code of it the mean
#: of a negative binomial with this dispersion; drinking falls with age and is very unequal).
NUMBERS: dict[str, tuple[str, list[float]]] = {"weekly_drinks": ("age_group", [6.0, 5.0, 3.5, 2.5])}
NUMBER_DISPERSION = 1.2

#: Randomized numbers' simulated true answers: key → (the share who had none, the mean of a negative
#: binomial with :data:`NUMBER_DISPERSION` for the others), clamped to the range. With 0.35 and 7.0 on
#: 0 to 30 the true mean is about 4.5; the results page shows the mean of the respondents drawn.
RANDOMIZED_NUMBERS: dict[str, tuple[float, float]] = {"drinks_last_week": (0.35, 7.0)}

#: A yes/no question whose "yes" follows a number: key → (the number question, intercept, slope) of
#: P(yes) = σ(intercept + slope · number), so the regression page recovers a known slope.
LOGISTIC: dict[str, tuple[str, float, float]] = {"drink_driving": ("weekly_drinks", -3.4, 0.16)}


def _parent(key: str) -> str | None:
    for table in (DEPENDENCE, NUMBERS, LOGISTIC):
        if key in table:
            return table[key][0]
    return None


def ensure_demo_user(session: Session) -> User:
    """The demo's owner, an administrator, so that someone trying the app sees the users page too."""
    user = session.scalar(select(User).where(User.username == DEMO_USER))
    if user is None:
        user = User(username=DEMO_USER, is_admin=True)
        user.set_password(DEMO_PASSWORD)
        session.add(user)
    return user


def simulate_respondents(session: Session, survey: Survey, respondents: int, seed: int = 2026) -> None:
    """Insert ``respondents`` simulated submissions, randomized by each question's own mechanism.

    A bulk insert rather than ``record_submission`` per respondent, so the running tallies are
    rebuilt from the inserted rows at the end.
    """
    rng = np.random.default_rng(seed)
    reported = {}
    truths: dict[str, np.ndarray] = {}
    pending = list(survey.questions)
    while pending:  # each question after the one it depends on
        q = next(q for q in pending if _parent(q.key) is None or _parent(q.key) in truths)
        pending.remove(q)
        if q.kind_entry.randomized_number:
            none, mean = RANDOMIZED_NUMBERS[q.key]
            chance = NUMBER_DISPERSION / (NUMBER_DISPERSION + mean)
            drawn = rng.negative_binomial(NUMBER_DISPERSION, chance, respondents)
            truth = np.clip(np.where(rng.random(respondents) < none, 0, drawn), q.minimum, q.maximum)
            truths[q.key] = truth
            reported[q.id] = q.mechanism().randomize(truth, rng)  # codes, drawn as the browser draws them
            q.simulated_truth = [float(truth.mean())]  # the true mean among these respondents
            continue
        if q.is_number:
            parent, means = NUMBERS[q.key]
            mean = np.asarray(means)[truths[parent]]
            drawn = rng.negative_binomial(NUMBER_DISPERSION, NUMBER_DISPERSION / (NUMBER_DISPERSION + mean))
            truths[q.key] = reported[q.id] = np.clip(drawn, q.minimum, q.maximum)
            continue
        if q.key in LOGISTIC:
            parent, intercept, slope = LOGISTIC[q.key]
            yes = rng.random(respondents) < 1 / (1 + np.exp(-(intercept + slope * truths[parent])))
            truth = np.where(yes, 0, 1)  # code 0 is "yes"
        elif q.key in DEPENDENCE:
            parent, table = DEPENDENCE[q.key]
            cumulative = np.cumsum(np.asarray(table, dtype=float), axis=1)[truths[parent]]
            truth = (rng.random(respondents)[:, None] >= cumulative).sum(axis=1)
        else:
            truth = rng.choice(len(q.options), size=respondents, p=q.simulated_truth)
        truths[q.key] = truth
        mechanism = q.mechanism()
        reported[q.id] = truth if mechanism is None else mechanism.randomize(truth, rng)
        # What the estimates are compared with on the results page: the true shares among these
        # respondents, not the rates they were drawn from (a 95% interval is about the population,
        # but a reader checks it against the one truth there is to see).
        q.simulated_truth = (np.bincount(truth, minlength=len(q.options)) / respondents).tolist()
    ids = insert_submissions(session, survey, respondents, rng)
    session.execute(
        insert(Answer),
        [
            {"submission_id": i, "question_id": qid, "value": int(values[j])}
            for qid, values in reported.items()
            for j, i in enumerate(ids)
        ],
    )
    rebuild_tallies(session, survey)


def insert_submissions(session: Session, survey: Survey, respondents: int, rng: np.random.Generator) -> list[int]:
    """Insert ``respondents`` simulated submissions to ``survey``, spread over the last two weeks;
    their ids, in order (their answers and the tallies are the caller's)."""
    start = dt.date.today() - dt.timedelta(days=13)
    days = rng.integers(0, 14, size=respondents)
    # RETURNING, not explicit ids: on PostgreSQL explicit ids would leave the id sequence behind.
    return list(
        session.scalars(
            insert(Submission).returning(Submission.id, sort_by_parameter_order=True),
            [{"survey_id": survey.id, "submitted_on": start + dt.timedelta(days=int(d))} for d in days],
        ).all()
    )


def create_demo(session: Session, respondents: int = DEMO_RESPONDENTS) -> Survey:
    """Create the demo user, survey and simulated respondents (once); the caller commits."""
    existing = session.scalar(select(Survey).where(Survey.slug == DEMO_SLUG))
    if existing is not None:
        return existing
    owner = ensure_demo_user(session)
    survey = create_survey_from_spec(session, DEMO_SPEC, owner=owner)
    session.flush()
    simulate_respondents(session, survey, respondents)
    return survey
