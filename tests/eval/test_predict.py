"""predict -> score end to end: an oracle, a memorising micro model, determinism, LoRA."""

import json
import math
from types import SimpleNamespace

import pytest
import torch

from doit.data import abilities as ab
from doit.data import kinds as ak
from doit.data.load import load_items
from doit.eval import predict
from doit.eval.cli import main
from doit.eval.predict import encode, predict_items, prompt_text
from doit.eval.score import score_predictions
from doit.models import load_for_inference
from doit.models.chat import prepare_tokenizer, speaker_template
from doit.testing import byte_bpe, continuation_logprob, corpus_texts, tiny_llama
from tests.eval.oracle import ContextDecoder, OracleLM
from tests.tiny import FIXTURE, byte_bpe_tokenizer, metaspace_tokenizer


@pytest.fixture(scope="module")
def items():
    return load_items(FIXTURE, "test")


@pytest.mark.parametrize("make_tokenizer", [byte_bpe_tokenizer, metaspace_tokenizer])
def test_oracle_scores_100_and_distractor_lover_0_on_open(items, make_tokenizer):
    tok = make_tokenizer()
    tok.padding_side = "left"
    perfect = score_predictions(
        items, predict_items(OracleLM(tok, items), tok, items, batch_size=4)
    )
    assert {k: v["score"] for k, v in perfect["abilities"].items()} == {
        k: 100.0 for k in ab.ABILITY_KEYS + ab.OOD_KEYS
    }
    assert perfect["overall"] == 100.0
    fooled = score_predictions(
        items, predict_items(OracleLM(tok, items, prefer_choice=1), tok, items)
    )
    for key in ("code", "creative_writing", "role_play"):
        assert fooled["abilities"][key]["score"] == 0.0


def test_first_step_logits_are_per_option(items):
    tok = byte_bpe_tokenizer()
    tok.padding_side = "left"
    preds = predict_items(OracleLM(tok, items), tok, items)
    und = next(p for p in preds if p["type"] == "understanding")
    assert list(und["letter_logits"]) == ["A", "B", "C"]
    # log-probabilities: logit 10 for B, 0 for every other token of the vocabulary
    want = -math.log1p((len(tok) - 1) * math.exp(-10.0))
    assert (
        und["letter_logits"]["B"] == pytest.approx(want, rel=1e-4)
        and und["letter_logits"]["A"] < want
    )
    assert all("letter_logits" not in p for p in preds if p["type"] in ("math", "ethics"))


def train_to_memorise(model, tok, items, steps=60):
    """Full-batch training on the assistant tokens of ``items`` (open items: their gold choice)."""
    encs = [
        tok.apply_chat_template(
            it["messages"]
            if it["answer_kind"] != ak.OPEN
            else it["messages"][:-1] + [{"role": "assistant", "content": it["choices"][0]}],
            tokenize=True,
            return_dict=True,
            return_assistant_tokens_mask=True,
        )
        for it in items
    ]
    width = max(len(e["input_ids"]) for e in encs)
    ids = torch.tensor(
        [e["input_ids"] + [tok.pad_token_id] * (width - len(e["input_ids"])) for e in encs]
    )
    keep = torch.tensor([e["assistant_masks"] + [0] * (width - len(e["input_ids"])) for e in encs])
    mask = torch.tensor(
        [[1] * len(e["input_ids"]) + [0] * (width - len(e["input_ids"])) for e in encs]
    )
    labels = torch.where(keep == 1, ids, -100)
    opt = torch.optim.AdamW(model.parameters(), lr=1e-2)
    model.train()
    for _ in range(steps):
        model(input_ids=ids, attention_mask=mask, labels=labels).loss.backward()
        opt.step()
        opt.zero_grad()
    return model.eval()


@pytest.fixture(scope="module")
def memorised(tmp_path_factory, items):
    tok = byte_bpe_tokenizer()
    torch.manual_seed(0)
    model = train_to_memorise(tiny_llama(tok, hidden=64, layers=2), tok, items)
    out = tmp_path_factory.mktemp("memorised")
    model.save_pretrained(out)
    tok.save_pretrained(out)
    return out


@pytest.mark.slow
def test_memorised_model_scores_high_and_files_are_byte_identical(memorised, tmp_path):
    for run in ("a", "b"):
        assert (
            main(
                [
                    "predict",
                    "--model",
                    str(memorised),
                    "--data",
                    str(FIXTURE),
                    "--split",
                    "test",
                    "--ood",
                    "--out",
                    str(tmp_path / f"pred_{run}.jsonl"),
                    "--max-new-tokens",
                    "math=24",
                ]
            )
            == 0
        )
        assert (
            main(
                [
                    "score",
                    str(tmp_path / f"pred_{run}.jsonl"),
                    "--data",
                    str(FIXTURE),
                    "--split",
                    "test",
                    "--out",
                    str(tmp_path / f"scores_{run}.json"),
                ]
            )
            == 0
        )
    assert (tmp_path / "pred_a.jsonl").read_bytes() == (tmp_path / "pred_b.jsonl").read_bytes()
    assert (tmp_path / "scores_a.json").read_bytes() == (tmp_path / "scores_b.json").read_bytes()
    scores = json.loads((tmp_path / "scores_a.json").read_text())
    rows = scores["items"]
    assert sum(r["correct"] for r in rows) / len(rows) >= 0.9, [r for r in rows if not r["correct"]]


@pytest.mark.slow
def test_lora_adapter_evaluates(memorised, tmp_path):
    from peft import LoraConfig, get_peft_model
    from transformers import AutoModelForCausalLM

    base = AutoModelForCausalLM.from_pretrained(memorised)
    lora = get_peft_model(
        base, LoraConfig(r=4, target_modules=["q_proj", "v_proj"], init_lora_weights=False)
    )
    lora.save_pretrained(tmp_path / "adapter")
    out = tmp_path / "pred.jsonl"
    assert (
        main(
            [
                "predict",
                "--model",
                str(memorised),
                "--adapter",
                str(tmp_path / "adapter"),
                "--data",
                str(FIXTURE),
                "--abilities",
                "biology,code",
                "--out",
                str(out),
            ]
        )
        == 0
    )
    with_adapter = [json.loads(x) for x in out.read_text().splitlines()]
    assert (
        main(
            [
                "predict",
                "--model",
                str(memorised),
                "--data",
                str(FIXTURE),
                "--abilities",
                "biology,code",
                "--out",
                str(tmp_path / "base.jsonl"),
            ]
        )
        == 0
    )
    without = [json.loads(x) for x in (tmp_path / "base.jsonl").read_text().splitlines()]
    assert [p["idx"] for p in with_adapter] == [p["idx"] for p in without]
    assert with_adapter != without  # the (random, non-zero) adapter changed the outputs


# --- a scripted model: records what predict asks of it ----------------------------------------
class ScriptedLM:
    """``generate`` emits ``script`` (token ids, cyclically; going on where a prompt already
    ends with part of it) and stops, as transformers does, right after the first token in
    ``eos_token_id`` (pad after it); it records each call's unpadded prompts and
    ``max_new_tokens``. Scored spans' logits are uniform (a decoder with no next tokens)."""

    def __init__(self, tokenizer, script: list[int], context: int = 4096):
        self.tok, self.script, self.device = tokenizer, script, torch.device("cpu")
        self.config = SimpleNamespace(max_position_embeddings=context, _attn_implementation="eager")
        self.calls, self.dtype = [], torch.float32

    def eval(self):
        return self

    def generate(self, input_ids, attention_mask, max_new_tokens, eos_token_id, pad_token_id, **_):
        prompts = [
            [t for t, m in zip(ids, mask) if m]
            for ids, mask in zip(input_ids.tolist(), attention_mask.tolist())
        ]
        self.calls.append((prompts, max_new_tokens))
        rows = []
        for prompt in prompts:
            new, done = [], self._emitted(prompt)
            while len(new) < max_new_tokens:
                new.append(self.script[(done + len(new)) % len(self.script)])
                if new[-1] in eos_token_id:
                    break
            rows.append(new)
        steps = max(len(r) for r in rows)
        new = torch.tensor([r + [pad_token_id] * (steps - len(r)) for r in rows])
        first = torch.zeros(len(prompts), len(self.tok))
        return SimpleNamespace(sequences=torch.cat([input_ids, new], 1), logits=(first,))

    def _emitted(self, prompt: list[int]) -> int:
        """How much of the script ``prompt`` already ends with (predict continues a row)."""
        most = min(len(prompt), len(self.script) - 1)
        return next((k for k in range(most, 0, -1) if prompt[-k:] == self.script[:k]), 0)

    def get_decoder(self):
        return ContextDecoder(len(self.tok), {})

    def get_output_embeddings(self):
        return torch.nn.Identity()


def _generated(items):
    return [it for it in items if it["answer_kind"] != ak.OPEN]


# --- item 4: the study's budget, clamped to the context, the prompt never cut -------------------
def test_every_generated_kind_defaults_to_the_studys_1024_new_tokens(items):
    tok = byte_bpe_tokenizer()
    tok.padding_side, tok.model_max_length = "left", 4096
    lm = ScriptedLM(tok, encode(tok, "好") + [tok.eos_token_id])
    predict_items(lm, tok, _generated(items), batch_size=4)
    assert {budget for _, budget in lm.calls} == {1024}
    assert predict.budgets({"math": 64}) == {
        **{k: 1024 for k in ak.GENERATED_KINDS},
        "math": 64,
    }


def test_budget_is_clamped_to_the_context_and_the_prompt_is_never_cut(items):
    tok = byte_bpe_tokenizer()
    tok.padding_side = "left"
    context = 200  # every fixture prompt fits (longest 178), none with 1024 new tokens
    lm = ScriptedLM(tok, encode(tok, "好"), context)  # never stops: runs to the cap
    preds = predict_items(lm, tok, _generated(items), batch_size=4)
    full = {tuple(encode(tok, prompt_text(tok, it))) for it in _generated(items)}
    seen = [(tuple(p), n) for prompts, n in lm.calls for p in prompts]
    assert {p for p, _ in seen if p in full} == full  # every prompt whole
    assert all(any(p[: len(f)] == f for f in full) for p, _ in seen)  # continuations of them
    assert all(len(p) + n <= context for p, n in seen)  # never past the context
    assert all(p["hit_budget"] and "error" not in p for p in preds)
    by_key = {(p["type"], p["idx"]): p for p in preds}
    for it in _generated(items):
        want = context - len(encode(tok, prompt_text(tok, it)))
        assert by_key[(it["type"], it["idx"])]["max_new_tokens"] == want


def test_rows_of_a_batch_each_get_exactly_their_own_budget(items):
    tok = byte_bpe_tokenizer()
    tok.padding_side = "left"
    model = tiny_llama(tok).eval()  # untrained: never ends its turn
    prompts = [encode(tok, prompt_text(tok, it)) for it in _generated(items)[:3]]
    together = predict.generate_within(model, tok, prompts, [5, 9, 3])
    for prompt, n, (new, stopped, first) in zip(prompts, [5, 9, 3], together):
        alone, alone_stopped, alone_first = predict.generate_batch(model, tok, [prompt], n)[0]
        assert new == alone and len(new) == n and not stopped and not alone_stopped
        assert torch.allclose(first, alone_first, atol=1e-4)


def test_a_prompt_longer_than_the_context_is_a_counted_item_error(items):
    tok = byte_bpe_tokenizer()
    tok.padding_side = "left"
    lm = ScriptedLM(tok, encode(tok, "好") + [tok.eos_token_id], context=120)
    preds = predict_items(lm, tok, _generated(items))
    too_long = {
        (it["type"], it["idx"])
        for it in _generated(items)
        if len(encode(tok, prompt_text(tok, it))) >= 120
    }
    assert len(too_long) == 3  # the three 5-shot C-Eval questions
    errors = {(p["type"], p["idx"]): p for p in preds if "error" in p}
    assert set(errors) == too_long
    assert all(p["prediction"] == "" and "120" in p["error"] for p in errors.values())
    rules = predict.prediction_rules(preds, lm, tok, {}, "doit")
    assert rules["n_prompt_too_long"]["mc"] == sum(rules["n_prompt_too_long"].values()) == 3
    assert rules["context"] == 120


def test_rules_record_each_kinds_budget_and_how_many_items_hit_it(items):
    tok = byte_bpe_tokenizer()
    tok.padding_side = "left"
    gen = _generated(items)
    lm = ScriptedLM(tok, encode(tok, "所以答案是") + [tok.eos_token_id])
    n_script = len(encode(tok, "所以答案是"))
    budgets = {"math": n_script, "multiselect": n_script + 1}  # math hits it, ethics does not
    preds = predict_items(lm, tok, gen, max_new_tokens=budgets)
    rules = predict.prediction_rules(preds, lm, tok, budgets, "doit")
    assert rules["max_new_tokens"] == predict.budgets(budgets)
    n_math = sum(it["answer_kind"] == ak.MATH for it in gen)
    assert n_math and rules["n_hit_budget"]["math"] == n_math
    assert rules["n_hit_budget"]["multiselect"] == 0 and rules["n_hit_budget"]["mc"] == 0
    hits = [p for p in preds if p["hit_budget"]]
    assert {p["type"] for p in hits} == {"math"}
    assert all(p["prediction"] == "所以答案是" for p in hits)


def test_bad_budgets_are_refused():
    with pytest.raises(ValueError, match="open"):
        predict.budgets({"open": 10})
    with pytest.raises(ValueError, match="math.*0"):
        predict.budgets({"math": 0})


# --- item 10: stop at the template's end of turn ------------------------------------------------
QWEN_STYLE = (
    "{%- for message in messages %}"
    "{{- '<|im_start|>' + message['role'] + '\\n' + message['content'] + '<|im_end|>\\n' }}"
    "{%- endfor %}"
    "{%- if add_generation_prompt %}{{- '<|im_start|>assistant\\n' }}{%- endif %}"
)


def qwen_style_tokenizer():
    tok = byte_bpe(corpus_texts(FIXTURE))
    tok.add_special_tokens(
        {"eos_token": "<|endoftext|>", "additional_special_tokens": ["<|im_start|>", "<|im_end|>"]}
    )
    tok.chat_template = QWEN_STYLE
    tok.padding_side = "left"
    return tok


def test_native_template_stops_at_its_end_of_turn_token(items):
    tok = qwen_style_tokenizer()
    im_end = tok.convert_tokens_to_ids("<|im_end|>")
    script = encode(tok, "正确") + [im_end] + encode(tok, "错误") + [tok.eos_token_id]
    history = [it for it in items if it["answer_kind"] == ak.TF]
    preds = predict_items(ScriptedLM(tok, script), tok, history)
    assert [p["prediction"] for p in preds] == ["正确"] * len(history)
    assert im_end in predict.stop_token_ids(tok) and predict.chat_format_of(tok) == "native"


def test_doit_template_stops_at_eot_and_at_either_speaker_token(items):
    tok = byte_bpe_tokenizer()
    tok.padding_side = "left"
    history = [it for it in items if it["answer_kind"] == ak.TF]
    for speaker in ("<user>", "<assistant>", "<eot>"):
        script = encode(tok, "正确") + [tok.convert_tokens_to_ids(speaker)] + encode(tok, "错误")
        preds = predict_items(ScriptedLM(tok, script), tok, history)
        assert [p["prediction"] for p in preds] == ["正确"] * len(history), speaker


# --- item 12: a letter is scored by its whole token sequence ------------------------------------
@pytest.mark.parametrize("make_tokenizer", [byte_bpe_tokenizer, metaspace_tokenizer])
def test_letter_scores_are_summed_log_probabilities_of_the_letters_tokens(items, make_tokenizer):
    tok = make_tokenizer()
    tok.padding_side = "left"
    marker = tok.apply_chat_template(
        [{"role": "user", "content": "?"}], tokenize=False, add_generation_prompt=True
    )
    seqs = {x: encode(tok, marker + x)[len(encode(tok, marker)) :] for x in "ABCD"}
    if make_tokenizer is metaspace_tokenizer:  # "D" is a space marker, then the letter
        assert tok.convert_ids_to_tokens(seqs["D"]) == ["▁", "D"]
    else:
        assert all(len(s) == 1 for s in seqs.values())
    model = tiny_llama(tok).eval()
    mc = [it for it in items if it["answer_kind"] == ak.MC]
    preds = predict_items(model, tok, mc, batch_size=3, max_new_tokens={"mc": 1})
    for it, pred in zip(sorted(mc, key=lambda i: (i["type"], i["idx"])), preds):
        prompt = encode(tok, prompt_text(tok, it))
        want = {x: continuation_logprob(model, prompt, seqs[x]) for x in it["options"]}
        assert pred["letter_logits"] == pytest.approx(want, abs=1e-4), it["type"]
    rules = predict.prediction_rules(preds, model, tok, {}, "doit")
    assert "sum" in rules["letter_scoring"]
    assert rules["letter_tokens"]["D"] == tok.convert_ids_to_tokens(seqs["D"])


# --- item 9: --ood adds the C-Eval sets whatever --abilities says -------------------------------
def _items_predict_loads(monkeypatch, tmp_path, *flags):
    seen = {}

    def fake_predict(model, tokenizer, items, *args, **kwargs):
        seen["types"] = sorted({it["ability"] for it in items})
        return []

    monkeypatch.setattr("doit.models.load_for_inference", lambda *a, **k: (None, None))
    monkeypatch.setattr(predict, "predict_items", fake_predict)
    monkeypatch.setattr(predict, "chat_format_of", lambda tokenizer: "doit", raising=False)
    no_hits = {"n_hit_budget": {}, "n_prompt_too_long": {}}
    monkeypatch.setattr(predict, "prediction_rules", lambda *a, **k: no_hits, raising=False)
    argv = ["predict", "--model", "m", "--data", str(FIXTURE), "--out", str(tmp_path / "p.jsonl")]
    assert main([*argv, *flags]) == 0
    return seen["types"]


def test_ood_adds_the_ceval_sets_to_the_named_abilities(monkeypatch, tmp_path):
    got = _items_predict_loads(monkeypatch, tmp_path, "--abilities", "biology,code", "--ood")
    assert got == sorted(["biology", "code", *ab.OOD_KEYS])
    got = _items_predict_loads(monkeypatch, tmp_path, "--abilities", "biology,ceval_physician")
    assert got == ["biology", "ceval_physician"]
    assert _items_predict_loads(monkeypatch, tmp_path, "--abilities", "biology") == ["biology"]


# --- item 11: an untuned base is rendered as fine-tuning will render it -------------------------
@pytest.fixture(scope="module")
def untuned_base(tmp_path_factory):
    tok = byte_bpe(corpus_texts(FIXTURE))  # no chat template, no speaker tokens
    out = tmp_path_factory.mktemp("untuned")
    tiny_llama(tok, seed=1).save_pretrained(out)
    tok.save_pretrained(out)
    return out


def test_untuned_base_needs_a_chat_format_and_says_so(untuned_base, tmp_path, capsys):
    argv = ["predict", "--model", str(untuned_base), "--data", str(FIXTURE)]
    argv += ["--abilities", "biology", "--out", str(tmp_path / "p.jsonl")]
    assert main(argv) == 2
    assert "--chat-format" in capsys.readouterr().err
    assert main([*argv, "--chat-format", "doit", "--max-new-tokens", "mc=2"]) == 0
    rules = json.loads((tmp_path / "p.rules.json").read_text())
    assert rules["chat_format"] == "doit" and rules["max_new_tokens"]["mc"] == 2
    preds = [json.loads(x) for x in (tmp_path / "p.jsonl").read_text().splitlines()]
    assert len(preds) == 2 and all(set(p["letter_logits"]) == {"A", "B", "C", "D"} for p in preds)


def test_untuned_base_gets_the_speaker_rows_fine_tuning_gives_it(untuned_base):
    from transformers import AutoTokenizer
    from trl import ModelConfig

    from doit.train.sft import model as train_model

    model, tok = load_for_inference(str(untuned_base), chat_format="doit", seed=0)
    args = SimpleNamespace(
        model=ModelConfig(model_name_or_path=str(untuned_base), dtype="float32"),
        training=SimpleNamespace(
            seed=0, trust_remote_code=False, model_init_kwargs=None, local_process_index=0
        ),
        run=SimpleNamespace(chat_format="doit"),
        launch={},
    )
    train_tok = AutoTokenizer.from_pretrained(untuned_base)
    prepare_tokenizer(train_tok)
    trained = train_model.load_base_model(args, train_tok)
    assert train_tok.get_vocab() == tok.get_vocab() and tok.chat_template == speaker_template()
    rows = sorted(tok.convert_tokens_to_ids(["<user>", "<assistant>", "<eot>"]))
    assert rows[0] >= len(AutoTokenizer.from_pretrained(untuned_base))  # rows were added
    for get in ("get_input_embeddings", "get_output_embeddings"):
        want, got = getattr(trained, get)().weight, getattr(model, get)().weight
        assert torch.equal(want[rows], got[rows]), get
    other, _ = load_for_inference(str(untuned_base), chat_format="doit", seed=1)
    assert not torch.equal(other.get_input_embeddings().weight[rows], got[rows])
