"""How evaluation reads and judges each answer kind: the eval half of the answer-kind registry.

``doit.data.kinds.KINDS`` says what a kind is (generated within a budget or ranked, its
chance, the texts it ranks); this module attaches, by kind name, how an answer is extracted
from a prediction line and how it is judged against the gold. ``predict`` and ``score``
dispatch through ``behaviour(name)``; a test checks that every registered kind has both.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from doit.data import kinds as ak
from doit.eval import parsers
from doit.eval.math_equiv import equal_paper, equal_verify

MATH_RULES = ("paper", "verify")
TIE_RULES = ("correct", "wrong")
# How the text formulation's ranked texts are compared (predict stores what each needs):
NORMS = {
    "token": "summed log-probability / tokens (the mean per token, as the study ranks open items)",
    "char": "summed log-probability / characters of the text (OLMES's and lm-eval's acc_norm)",
    "pmi": "summed log-probability - the same span's log-probability after an empty question "
    "(pointwise mutual information: lm-eval's acc_mutual_info, OLMES's acc_uncond)",
}
DEFAULT_NORM = "char"  # chosen on valid (studies/micro_study/README.md, "Normalisation")
MC_FALLBACK = (
    "the item's own option letter with the highest summed log-probability of its tokens at the "
    "first answer position (predict's letter_logits)"
)


@dataclass(frozen=True)
class Rules:
    """The scoring rules a caller chooses (``score --math``, ``--ties``, ``--norm``)."""

    math: str = "paper"  # paper: MATH-style string normalisation (the study's); verify: math-verify
    ties: str = "correct"  # a ranked gold tied with its best alternative: correct (the study's)
    norm: str = DEFAULT_NORM  # the text formulation's ranking: token | char | pmi (NORMS)

    def __post_init__(self):
        if self.math not in MATH_RULES or self.ties not in TIE_RULES or self.norm not in NORMS:
            raise ValueError(
                f"math must be one of {MATH_RULES}, ties one of {TIE_RULES} and "
                f"norm one of {tuple(NORMS)}"
            )


@dataclass(frozen=True)
class KindEval:
    """What evaluation does with one answer kind."""

    extract: Callable[[dict, dict], Any]  # (item, prediction line) -> the answer it states
    judge: Callable[[dict, Any, Rules], dict]  # (item, answer, rules) -> the score row's fields
    extra_verdicts: tuple[str, ...] = ()  # verdict fields beside ``correct`` (missing: False)
    letter_scores: bool = False  # predict records each option letter's log-probability
    describe: Callable[[Rules], dict[str, str]] = lambda rules: {}  # SCORES.json rules entries


def _text(pred: dict) -> str:
    return pred.get("prediction") or ""


def _parsed(parse: Callable[[str], str | None]) -> Callable[[dict, dict], str | None]:
    """The extraction that parses the output text alone (``doit.eval.parsers``)."""
    return lambda item, pred: parse(_text(pred))


def _exact(normalise_gold: Callable[[str], str] = str) -> Callable[[dict, Any, Rules], dict]:
    """The judge of a parsed answer: right when it equals the (normalised) gold."""

    def judge(item: dict, got: str | None, rules: Rules) -> dict:
        return {
            "extracted": got,
            "correct": got is not None and got == normalise_gold(item["gold"]),
        }

    return judge


def _mc_extract(item: dict, pred: dict) -> tuple[str | None, str]:
    """(letter, via): the output when it is one of the item's letters, else the letter scores'."""
    letter = parsers.mc_letter(_text(pred), item["options"])
    if letter is not None:
        return letter, "output"
    return parsers.logit_choice(pred.get("letter_logits"), item["options"]), "logits"


def _mc_judge(item: dict, got: tuple[str | None, str], rules: Rules) -> dict:
    letter, via = got
    return {"extracted": letter, "via": via, "correct": letter == item["gold"]}


def _math_judge(item: dict, got: str | None, rules: Rules) -> dict:
    paper, verify = equal_paper(got, item["gold"]), equal_verify(got, item["gold"])
    return {
        "extracted": got,
        "correct_paper": paper,
        "correct_verify": verify,
        "correct": paper if rules.math == "paper" else verify,
    }


def _ranked_extract(item: dict, pred: dict) -> list[float] | None:
    """The perplexity of each ranked text (gold first), or None when they are not all there."""
    ppl = pred.get("choice_ppl")
    return ppl if ppl and len(ppl) == len(ak.kind(item["answer_kind"]).ranked(item)) else None


def _ranked_judge(item: dict, ppl: list[float] | None, rules: Rules) -> dict:
    """Right when the gold's perplexity is below every alternative's (ties: ``rules.ties``)."""
    if ppl is None:
        return {"correct": False, "extracted": None, "via": "missing choice_ppl"}
    gold, best_other = ppl[0], min(ppl[1:])
    correct = gold <= best_other if rules.ties == "correct" else gold < best_other
    return {"correct": bool(correct), "extracted": ppl.index(min(ppl))}


def _ranked_rule(rules: Rules) -> str:
    return (
        "ppl(gold) <= min(distractors)"
        if rules.ties == "correct"
        else "ppl(gold) < min(distractors)"
    )


RANKED_FIELDS = ("choice_logprob", "choice_tokens", "choice_chars", "choice_uncond")


def _text_extract(item: dict, pred: dict) -> dict[str, list[float]] | None:
    """The ranked texts' summed log-probabilities, token and character counts and unconditional
    log-probabilities (gold first), or None when they are not all there for every text."""
    n = len(item["choices"])
    got = {f: pred.get(f) for f in RANKED_FIELDS}
    return got if all(isinstance(v, list) and len(v) == n for v in got.values()) else None


def normalised(fields: dict[str, list[float]], norm: str) -> list[float]:
    """Each ranked text's score under ``norm`` (higher ranks first)."""
    lp, tokens, chars, uncond = (fields[f] for f in RANKED_FIELDS)
    if norm == "token":
        return [x / max(n, 1) for x, n in zip(lp, tokens)]
    if norm == "char":
        return [x / max(n, 1) for x, n in zip(lp, chars)]
    return [x - u for x, u in zip(lp, uncond)]


def _text_judge(item: dict, fields: dict | None, rules: Rules) -> dict:
    """Right when the gold's normalised score is above every other text's (ties: ``rules.ties``);
    ``extracted`` is the index of the best text."""
    if fields is None:
        return {"correct": False, "extracted": None, "via": "missing ranked scores"}
    scores = normalised(fields, rules.norm)
    gold, best_other = scores[0], max(scores[1:])
    correct = gold >= best_other if rules.ties == "correct" else gold > best_other
    return {"correct": bool(correct), "extracted": scores.index(max(scores))}


def _text_rule(rules: Rules) -> dict[str, str]:
    tie = ">=" if rules.ties == "correct" else ">"
    return {"text": f"score(gold) {tie} max(other texts), score = {NORMS[rules.norm]}"}


TEXT_KIND = KindEval(extract=_text_extract, judge=_text_judge, describe=_text_rule)

KIND_EVAL: dict[str, KindEval] = {
    ak.MC: KindEval(
        extract=_mc_extract,
        judge=_mc_judge,
        letter_scores=True,
        describe=lambda rules: {"mc_fallback": MC_FALLBACK},
    ),
    ak.TF: KindEval(extract=_parsed(parsers.tf_answer), judge=_exact()),
    ak.MULTISELECT: KindEval(extract=_parsed(parsers.multiselect_answer), judge=_exact()),
    ak.CLOZE: KindEval(extract=_parsed(parsers.cloze_answer), judge=_exact(parsers.cloze_text)),
    ak.MATH: KindEval(
        extract=_parsed(parsers.math_answer),
        judge=_math_judge,
        extra_verdicts=("correct_paper", "correct_verify"),
    ),
    ak.OPEN: KindEval(
        extract=_ranked_extract,
        judge=_ranked_judge,
        describe=lambda rules: {"open": _ranked_rule(rules)},
    ),
    ak.MC_TEXT: TEXT_KIND,
    ak.TF_TEXT: TEXT_KIND,
    ak.MULTISELECT_TEXT: TEXT_KIND,
}


def behaviour(name: str) -> KindEval:
    """How evaluation handles answer kind ``name`` (KeyError naming the known kinds)."""
    try:
        return KIND_EVAL[name]
    except KeyError:
        raise KeyError(
            f"answer kind {name!r} has no evaluation; known: {', '.join(KIND_EVAL)}"
        ) from None


def judge(item: dict, pred: dict, rules: Rules) -> dict:
    """The score row fields of ``pred`` for ``item``: what it states and whether it is right."""
    kind = behaviour(item["answer_kind"])
    return kind.judge(item, kind.extract(item, pred), rules)


def rule_notes(rules: Rules) -> dict[str, str]:
    """What SCORES.json's ``rules`` says about each kind's judging, in registry order."""
    return {k: v for name in ak.ANSWER_KINDS for k, v in behaviour(name).describe(rules).items()}
