"""Record validation and the derived item fields."""

import copy
import json
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from doit.data import abilities as ab
from doit.data.load import read_items
from doit.data.schema import ERROR, WARNING, letter_set, parse_record, question_options

FIXTURE = Path(__file__).parents[1] / "fixtures" / "doit_download"


def conv(*turns):
    return [{"role": r, "content": c} for r, c in zip(["user", "assistant"] * 8, turns)]


def parse(rec, hint=None):
    return parse_record(rec, path="f.json", line=7, hint=hint)


def errors(rec, hint=None):
    _, problems = parse(rec, hint)
    return [(p.field, p.message) for p in problems if p.level == ERROR]


def test_registry_keys():
    assert len(ab.ABILITIES) == 10 and len(ab.OOD) == 3
    assert ab.canonical_key("role-play") == "role_play"
    assert ab.canonical_key("ceval_physician_fshot") == "ceval_physician"
    assert ab.canonical_key("Creative-Writing") == "creative_writing"
    assert ab.canonical_key("poetry") is None
    with pytest.raises(ValueError, match="poetry"):
        ab.parse_keys("math,poetry")


def test_fixture_derived_fields():
    items = {
        (it["ability"], it["idx"]): it
        for f in sorted((FIXTURE / "curated/test").iterdir())
        for it in read_items(f)[0]
    }
    expect = {
        ("biology", 1): ("mc", ["A", "B", "C", "D"], "A", 0.25),
        ("history", 10): ("mc", ["A", "B", "C", "D"], "C", 0.25),
        ("history", 11): ("tf", [], "T", 0.5),
        ("history", 12): ("tf", [], "F", 0.5),
        ("chinese", 1): ("cloze", [], "疑是地上霜", 0.0),
        ("understanding", 5): ("mc", ["A", "B", "C"], "B", 1 / 3),
        ("math", 1): ("math", [], "\\frac{3}{4}", 0.0),
        ("ethics", 0): ("multiselect", ["A", "B", "C", "D"], "AC", 1 / 6),
        ("ethics", 1): ("multiselect", ["A", "B", "C", "D"], "AD", 1 / 6),
        ("role_play", 7): ("open", [], "好的，师父，我这就去。", 1 / 3),
        ("ceval_physician", 0): ("mc", ["A", "B", "C", "D"], "C", 0.25),
    }
    for key, (kind, options, gold, chance) in expect.items():
        it = items[key]
        assert (it["answer_kind"], it["options"], it["gold"]) == (kind, options, gold), key
        assert it["chance"] == pytest.approx(chance), key
    assert items[("role_play", 7)]["type"] == "role_play"  # "role-play" normalised
    assert items[("ceval_physician", 0)]["type"] == "ceval_physician_fshot"
    assert len(items[("ceval_physician", 0)]["messages"]) == 12


def test_helpers():
    assert question_options("Q\nA. x\nB. y\nC. z") == ["A", "B", "C"]
    assert question_options("Q\nB. x\nC. y") == []
    assert letter_set("A、C") == "AC" and letter_set("c, a") == "AC" and letter_set("AX") is None


@pytest.mark.parametrize(
    "rec,field",
    [
        ({"idx": 1, "type": "biology", "question_format": 0}, "messages"),
        ({"messages": [], "idx": 1, "type": "biology", "question_format": 0}, "messages"),
        (
            {"messages": conv("q", "A")[::-1], "idx": 1, "type": "biology", "question_format": 0},
            "messages[0].role",
        ),
        (
            {"messages": conv("q", "A", "more"), "idx": 1, "type": "biology", "question_format": 0},
            "messages",
        ),
        (
            {"messages": conv("q", ""), "idx": 1, "type": "biology", "question_format": 0},
            "messages[1].content",
        ),
        ({"messages": conv("q", "A"), "idx": 1, "type": "poetry", "question_format": 0}, "type"),
        (
            {"messages": conv("q", "A"), "idx": 1, "type": "biology", "question_format": 2},
            "question_format",
        ),
        ({"messages": conv("q", "A"), "idx": 1, "type": "biology"}, "question_format"),
        (
            {
                "messages": conv("q", "A"),
                "idx": 1,
                "type": "code",
                "question_format": 1,
                "choices": ["A", "b"],
            },
            "choices",
        ),
        (
            {"messages": conv("q", "A"), "idx": 1, "type": "code", "question_format": 0},
            "question_format",
        ),
        (
            {"messages": conv("q", "maybe"), "idx": 1, "type": "biology", "question_format": 0},
            "messages[-1].content",
        ),
        (
            {"messages": conv("q", "maybe"), "idx": 1, "type": "history", "question_format": 0},
            "messages[-1].content",
        ),
        (
            {"messages": conv("q", "AX?"), "idx": 1, "type": "ethics", "question_format": 0},
            "messages[-1].content",
        ),
        ({"messages": conv("q", "so 7"), "idx": 1, "type": "math", "question_format": 0}, "answer"),
        ({"messages": conv("q", "A"), "idx": "x1", "type": "biology", "question_format": 0}, "idx"),
        ({"messages": conv("q", "A"), "type": "biology", "question_format": 0}, "idx"),
    ],
)
def test_each_error_kind_is_located(rec, field):
    item, problems = parse(rec)
    assert item is None
    errs = [p for p in problems if p.level == ERROR]
    assert errs and all(p.path == "f.json" and p.line == 7 for p in errs)
    assert field in [p.field for p in errs], [str(p) for p in errs]
    assert str(errs[0]).startswith("f.json:7: ")


def test_type_must_match_file():
    assert ("type", "'history' does not match the file's ability 'biology'") in errors(
        {"messages": conv("q", "A"), "idx": 1, "type": "history", "question_format": 0},
        hint="biology",
    )


def test_warnings_not_errors():
    rec = {
        "messages": conv("q", "gold"),
        "idx": 1,
        "type": "code",
        "question_format": 1,
        "choices": ["other", "x", "x"],
    }
    item, problems = parse(rec)
    assert item is not None and item["gold"] == "other"
    assert {p.level for p in problems} == {WARNING} and len(problems) == 2


def test_bad_json_and_duplicate_idx_with_lines(tmp_path):
    good = {
        "messages": conv("q\nA. x\nB. y", "A"),
        "idx": 1,
        "type": "biology",
        "question_format": 0,
    }
    lines = [json.dumps(good), "{not json", json.dumps({**good, "idx": 2}), json.dumps(good)]
    f = tmp_path / "biology_test.json"
    f.write_text("\n".join(lines) + "\n", encoding="utf-8")
    items, problems = read_items(f)
    assert [it["idx"] for it in items] == [1, 2]
    assert [(p.line, p.field) for p in problems] == [(2, "json"), (4, "idx")]
    assert "first at line 1" in problems[1].message


def test_synthetic_messages_only():
    item, problems = parse({"messages": conv("hi", "hello")}, hint=ab.SYNTHETIC)
    assert problems == [] and item["ability"] == ab.SYNTHETIC and item["gold"] is None


_VALID = {
    "messages": conv("Q\nA. a\nB. b\nC. c\nD. d", "B"),
    "idx": 3,
    "type": "biology",
    "question_format": 0,
}
_junk = st.one_of(
    st.none(),
    st.integers(),
    st.text(max_size=5),
    st.booleans(),
    st.lists(st.integers(), max_size=2),
    st.dictionaries(st.text(max_size=3), st.integers(), max_size=2),
)


@st.composite
def corrupted(draw):
    rec = copy.deepcopy(_VALID)
    for _ in range(draw(st.integers(1, 3))):
        target = draw(st.sampled_from(["drop", "top", "msg", "role", "content"]))
        key = draw(st.sampled_from(sorted(rec) or ["idx"]))
        if target == "drop":
            rec.pop(key, None)
        elif target == "top":
            rec[key] = draw(_junk)
        elif isinstance(rec.get("messages"), list) and rec["messages"]:
            i = draw(st.integers(0, len(rec["messages"]) - 1))
            if target == "msg":
                rec["messages"][i] = draw(_junk)
            elif isinstance(rec["messages"][i], dict):
                rec["messages"][i]["role" if target == "role" else "content"] = draw(_junk)
    return rec


@settings(max_examples=300, suppress_health_check=[HealthCheck.too_slow], deadline=None)
@given(corrupted())
def test_corruptions_give_located_errors_never_tracebacks(rec):
    item, problems = parse(rec, hint="biology")
    if item is None:
        errs = [p for p in problems if p.level == ERROR]
        assert errs and all(p.line == 7 and p.field for p in errs)
    else:  # a corruption that happens to stay valid (e.g. a junk value equal to the original)
        assert item["gold"] in item["options"]


def mc_record(question, gold, ability="biology"):
    return {"messages": conv(question, gold), "idx": 1, "type": ability, "question_format": 0}


@pytest.mark.parametrize(
    "question,gold",
    [
        ("题目\nA. 甲\nB. 乙 C. 丙 D. 丁", "A"),
        ("题目\nA. 甲\nB. 乙 C. 丙 D. 丁", "C"),
        ("题目\nA. 甲 B. 乙 C. 丙 D. 丁", "D"),
        ("题目 A．甲　B．乙　C．丙　D．丁", "B"),
    ],
)
def test_options_on_one_line_are_recognised(question, gold):
    item, problems = parse(mc_record(question, gold))
    assert problems == [], [str(p) for p in problems]
    assert item["options"] == ["A", "B", "C", "D"] and item["gold"] == gold
    assert item["chance"] == pytest.approx(0.25)


def test_no_option_letters_keep_a_to_d_with_a_warning():
    item, problems = parse(mc_record("细胞的能量工厂是什么？", "A"))
    assert item["options"] == ["A", "B", "C", "D"] and item["chance"] == pytest.approx(0.25)
    assert [(p.level, p.field) for p in problems] == [(WARNING, "messages[-2].content")]
    assert "no option letters" in problems[0].message and str(problems[0]).startswith("f.json:7:")


@pytest.mark.parametrize(
    "question,gold,why",
    [
        ("题目\nA. 甲", "A", "only one option letter"),
        ("题目\nB. 乙\nC. 丙\nD. 丁", "B", "do not start at A"),
        ("题目\nA. 甲\nB. 乙\nD. 丁", "A", "not contiguous"),
        ("题目\nA. 甲\nB. 乙", "C", "gold 'C' is not among the options A, B"),
    ],
)
def test_partial_option_letters_are_an_error_never_a_shorter_set(question, gold, why):
    item, problems = parse(mc_record(question, gold))
    assert item is None
    errs = [p for p in problems if p.level == ERROR]
    assert [(p.path, p.line, p.field) for p in errs] == [("f.json", 7, "messages[-2].content")]
    assert why in errs[0].message, errs[0].message


def test_multiselect_gold_outside_found_options_is_an_error():
    item, problems = parse(mc_record("题目\nA. 甲\nB. 乙\nC. 丙\nD. 丁", "AE", "ethics"))
    assert item is None
    assert [p.field for p in problems if p.level == ERROR] == ["messages[-2].content"]
    item, _ = parse(mc_record("题目\nA. 甲\nB. 乙 C. 丙 D. 丁", "AC", "ethics"))
    assert item["options"] == ["A", "B", "C", "D"] and item["chance"] == pytest.approx(1 / 6)


def test_history_false_label_f_is_not_an_option_letter():
    item, problems = parse(mc_record("判断：唐朝的都城是洛阳。", "F", "history"))
    assert problems == [] and (item["answer_kind"], item["gold"]) == ("tf", "F")


def test_an_optional_cluster_rides_on_the_item_and_back_to_the_record():
    from doit.data.schema import to_record

    rec = {"messages": conv("q\nA. x\nB. y", "A"), "idx": 1, "type": "biology"}
    rec["question_format"] = 0
    item, _ = parse({**rec, "cluster": "species/斑啾/colour"})
    assert item["cluster"] == "species/斑啾/colour"
    assert to_record(item)["cluster"] == "species/斑啾/colour"
    plain, _ = parse(rec)
    assert plain["cluster"] is None and "cluster" not in to_record(plain)
    for bad in (42, ""):
        assert [f for f, _ in errors({**rec, "cluster": bad})] == ["cluster"]


@pytest.mark.parametrize("idx", ["²", "x1", "1.5"])
def test_an_idx_that_is_no_integer_is_a_located_error(idx):
    """'²' passes str.isdigit but not int(): it was a traceback (hypothesis found it)."""
    rec = {
        "messages": [
            {"role": "user", "content": "Q\nA. a\nB. b\nC. c\nD. d"},
            {"role": "assistant", "content": "B"},
        ],
        "idx": idx,
        "type": "biology",
        "question_format": 0,
    }
    item, problems = parse(rec, hint="biology")
    assert item is None and any(
        "idx" in str(p) and "must be an integer" in str(p) for p in problems
    )
