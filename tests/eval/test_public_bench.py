"""CMMLU / AGIEval / C-Eval through lm-eval from local files (doit.eval.public_bench).

Fixtures (tests/fixtures/benchmarks/) are in each benchmark's own file format: 2 subjects per
benchmark, 3-5 scored items each, 5 dev items (AGIEval: the first 5 single-answer items of a
file; jec-qa-kd also holds 2 multi-answer items, which are skipped).
"""

import csv
import json
from pathlib import Path

import pytest
import torch
from lm_eval.api.model import LM

from doit.eval import public_bench as bench
from doit.eval.cli import main
from doit.eval.predict import encode, letter_sequences
from doit.testing import continuation_logprob, tiny_llama
from tests.tiny import byte_bpe_tokenizer, metaspace_tokenizer

DATA = Path(__file__).resolve().parents[1] / "fixtures" / "benchmarks"
# Gold letters of the scored items, read off the fixture files by hand.
GOLD = {
    "cmmlu": {"agronomy": "ABA", "anatomy": "ACDCD"},
    "agieval": {"logiqa-zh": "ABCD", "jec-qa-kd": "BCA"},
    "ceval": {"physician": "ABCD", "teacher_qualification": "ABC"},
}


class LetterPicker(LM):
    """An lm-eval LM whose answer we set: ``pick(context)`` gets log-prob 0, the others -10.
    Renders chat with a tiny doit tokenizer and records every context it was asked about."""

    def __init__(self, pick):
        super().__init__()
        self.tokenizer, self.pick, self.contexts = byte_bpe_tokenizer(), pick, []

    def loglikelihood(self, requests, disable_tqdm=False):
        self.contexts += [r.args[0] for r in requests]
        return [(0.0 if r.args[1] == self.pick(r.args[0]) else -10.0, False) for r in requests]

    def loglikelihood_rolling(self, requests, disable_tqdm=False):
        raise NotImplementedError

    def generate_until(self, requests, disable_tqdm=False):
        raise NotImplementedError

    def apply_chat_template(self, chat_history, add_generation_prompt=True):
        return self.tokenizer.apply_chat_template(
            chat_history, tokenize=False, add_generation_prompt=add_generation_prompt
        )

    @property
    def tokenizer_name(self):
        return "tiny-doit"


def oracle_pick():
    """The gold letter of the question in the last user turn (questions are unique)."""
    configs = bench.build_configs(bench.BENCHMARKS, DATA, 0)
    gold = {}
    for name in ("cmmlu", "ceval"):
        q, a = ("Question", "Answer") if name == "cmmlu" else ("question", "answer")
        for files in bench.subjects(name, DATA).values():
            with open(files["test"], encoding="utf-8", newline="") as f:
                gold.update({r[q].strip(): r[a] for r in csv.DictReader(f)})
    for cfg in configs["agieval"].values():
        _, scored, _ = bench.agieval_split(cfg["dataset_kwargs"]["path"])
        gold.update({f"{it['passage']}\n{it['question']}".strip(): it["label"] for it in scored})

    def pick(context):
        last = context.rsplit("<user>", 1)[1]
        hits = [letter for q, letter in gold.items() if q in last]
        assert len(hits) == 1, last
        return hits[0]

    return pick


def test_macro_and_micro_by_hand():
    scores = {"a": {"acc": 100.0, "n": 1}, "b": {"acc": 50.0, "n": 4}, "c": {"acc": 0.0, "n": 5}}
    out = bench.aggregate(scores)
    assert out["macro"] == pytest.approx(50.0)  # (100 + 50 + 0) / 3
    assert out["micro"] == pytest.approx(30.0)  # (1 + 2 + 0) / 10


def test_always_a_gives_hand_computed_subject_scores_and_averages():
    result = bench.run_bench(LetterPicker(lambda ctx: "A"), DATA, list(bench.BENCHMARKS), [0, 5])
    for name, subjects in GOLD.items():
        for k in ("0", "5"):
            got = result["benchmarks"][name][k]
            assert {s: v["n"] for s, v in got["subjects"].items()} == {
                s: len(g) for s, g in subjects.items()
            }
            for s, g in subjects.items():
                assert got["subjects"][s]["acc"] == pytest.approx(100 * g.count("A") / len(g))
    cmmlu = result["benchmarks"]["cmmlu"]["0"]
    assert cmmlu["macro"] == pytest.approx((200 / 3 + 20) / 2)  # mean of 66.7 and 20
    assert cmmlu["micro"] == pytest.approx(100 * 3 / 8)  # 3 of 8 items
    assert result["benchmarks"]["ceval"]["5"]["macro"] == pytest.approx((25 + 100 / 3) / 2)
    assert result["benchmarks"]["ceval"]["5"]["micro"] == pytest.approx(100 * 2 / 7)
    assert result["rules"]["agieval_multi_answer_skipped"] == {"logiqa-zh": 0, "jec-qa-kd": 2}


def test_oracle_scores_100_everywhere():
    result = bench.run_bench(LetterPicker(oracle_pick()), DATA, ["cmmlu", "agieval", "ceval"], [5])
    for name in GOLD:
        entry = result["benchmarks"][name]["5"]
        assert entry["macro"] == entry["micro"] == 100.0
        assert {s: v["n"] for s, v in entry["subjects"].items()} == {
            s: len(g) for s, g in GOLD[name].items()
        }


def test_prompts_are_the_study_format_through_the_chat_template():
    lm = LetterPicker(lambda ctx: "A")
    bench.run_bench(lm, DATA, ["cmmlu", "agieval"], [0, 5])
    zero = (
        "<user>农田灌溉水的含盐量一般应低于____克/升\nA. 2\nB. 0.50\nC. 10\nD. 20<eot><assistant>"
    )
    assert zero in lm.contexts  # options stay text: "0.50" is not read as 0.5
    first_dev = "<user>农作物生长最需要的三种大量元素是____\nA. 氮磷钾\nB. 钙镁硫\nC. 铁锰锌\nD. 铜钼硼<eot><assistant>A<eot>"
    five = [c for c in lm.contexts if c.endswith(zero) and c != zero]
    assert five and five[0].startswith(first_dev) and five[0].count("<assistant>") == 6
    assert [turn[:6] for turn in five[0].split("<assistant>")[1:6]] == [
        f"{x}<eot>" for x in "ABCDA"
    ]  # the dev file's first 5 answers, in file order
    passage = "<user>所有的金属都导电，铜是金属。\n由此可以推出：\nA. 铜导电\nB. 铜不导电\nC. 导电的都是金属\nD. 铜不是金属<eot><assistant>"
    assert passage in lm.contexts  # AGIEval: passage line, "(A)" prefixes become "A. "
    assert "<user>以下哪项与“所有的猫都怕水”矛盾？\nA. 有的猫怕水" in "".join(lm.contexts)
    assert not any("(A)" in c or "下列属于民事法律行为的有" in c for c in lm.contexts)


@pytest.mark.parametrize("make_tokenizer", [byte_bpe_tokenizer, metaspace_tokenizer])
def test_letter_scores_are_the_letters_log_probabilities(make_tokenizer):
    from lm_eval.models.huggingface import HFLM

    tok = make_tokenizer()
    model = tiny_llama(tok).eval()
    lm = HFLM(pretrained=model, tokenizer=tok, batch_size=4, add_bos_token=False)
    letters = bench.letter_tokens(lm)
    seqs = letter_sequences(tok)  # the tokens predict.py scores each letter by
    assert letters["ids"] == {x: seqs[x] for x in "ABCD"}
    assert letters["next_token"] or make_tokenizer is metaspace_tokenizer
    configs = list(bench.build_configs(["ceval"], DATA, 0)["ceval"].values())
    results = bench.evaluate_tasks(lm, configs, 0, log_samples=True)
    for sample in results["samples"]["doit_ceval_physician"]:
        context = encode(tok, sample["arguments"][0][0])
        got = torch.tensor([r[0] for r in sample["filtered_resps"]])
        want = [continuation_logprob(model, context, letters["ids"][x]) for x in "ABCD"]
        assert torch.allclose(got, torch.tensor(want), atol=1e-4)
        assert sample["acc"] == float(int(got.argmax()) == sample["target"])
        if letters["next_token"]:  # one token per letter: exactly the next-token log-softmax
            with torch.no_grad():
                logits = model(torch.tensor([context])).logits[0, -1].float()
            next_token = torch.log_softmax(logits, -1)[[seqs[x][0] for x in "ABCD"]]
            assert torch.allclose(got, next_token, atol=1e-4)


def test_layout_errors_say_what_is_missing(tmp_path):
    (tmp_path / "cmmlu" / "test").mkdir(parents=True)
    (tmp_path / "cmmlu" / "test" / "law.csv").write_text(",Question,A,B,C,D,Answer\n")
    with pytest.raises(FileNotFoundError, match="law.*cmmlu/dev/law.csv"):
        bench.subjects("cmmlu", tmp_path)
    with pytest.raises(FileNotFoundError, match="Chinese multiple-choice"):
        bench.subjects("agieval", tmp_path)
    (tmp_path / "few.jsonl").write_text(
        "\n".join(
            json.dumps({"question": "q", "options": ["(A)x", "(B)y"], "label": "A"})
            for _ in range(5)
        )
    )
    with pytest.raises(ValueError, match="5 single-answer items; need more than 5"):
        bench.agieval_split(tmp_path / "few.jsonl")
    with pytest.raises(ValueError):
        bench.shot_list("0,6")
    with pytest.raises(ValueError):
        bench.benchmark_list("cmmlu,mmlu")


@pytest.fixture(scope="module")
def tiny_model_dir(tmp_path_factory):
    tok = byte_bpe_tokenizer()
    out = tmp_path_factory.mktemp("tiny_bench_model")
    tiny_llama(tok).save_pretrained(out)
    tok.save_pretrained(out)
    return out


@pytest.mark.slow
def test_cli_end_to_end_zero_and_five_shot(tiny_model_dir, tmp_path):
    out = tmp_path / "BENCH.json"
    argv = ["bench", "--model", str(tiny_model_dir), "--data-dir", str(DATA)]
    argv += [
        "--tasks",
        "cmmlu,agieval,ceval",
        "--shots",
        "0,5",
        "--out",
        str(out),
        "--dtype",
        "fp32",
    ]
    assert main(argv) == 0
    result = json.loads(out.read_text(encoding="utf-8"))
    assert set(result["benchmarks"]) == set(GOLD)
    for name, subjects in GOLD.items():
        assert set(result["benchmarks"][name]) == {"0", "5"}
        for entry in result["benchmarks"][name].values():
            subj = entry["subjects"]
            assert {s: v["n"] for s, v in subj.items()} == {s: len(g) for s, g in subjects.items()}
            for v in subj.values():  # a whole number of correct items
                assert v["acc"] * v["n"] / 100 == pytest.approx(round(v["acc"] * v["n"] / 100))
            accs = [v["acc"] for v in subj.values()]
            assert entry["macro"] == pytest.approx(sum(accs) / len(accs))
            total = sum(v["n"] for v in subj.values())
            assert entry["micro"] == pytest.approx(
                sum(v["acc"] * v["n"] for v in subj.values()) / total
            )
    assert result["rules"]["shots"] == [0, 5] and result["rules"]["model"] == str(tiny_model_dir)
