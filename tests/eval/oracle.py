"""A fake causal LM that knows the answers: for checking predict -> score end to end.

``generate`` emits the gold answer (or a chosen wrong one) for each prompt it was told
about; its forward pass gives near-certain next tokens along the sequences it should
prefer (the gold choice, or a distractor; an mc prompt followed by its gold letter) and
uniform logits elsewhere.
"""

from types import SimpleNamespace

import torch

from doit.data import abilities as ab
from doit.eval.predict import choice_sequences, encode, letter_sequences, prompt_text


class OracleLM:
    def __init__(self, tokenizer, items, prefer_choice: int = 0):
        self.tok, self.device = tokenizer, torch.device("cpu")
        self.config = SimpleNamespace(max_position_embeddings=512)
        self.vocab = len(tokenizer)
        self.answers, self.preferred = {}, set()
        self.letters = letter_sequences(tokenizer)
        for it in items:
            if it["answer_kind"] == ab.OPEN:
                seq, _ = choice_sequences(tokenizer, it, 512)[prefer_choice]
                self.preferred.add(tuple(seq))
            else:
                text = {
                    ab.TF: "正确" if it["gold"] == "T" else "错误",
                    ab.MATH: f"所以 \\boxed{{{it['gold']}}}",
                }.get(it["answer_kind"], it["gold"])
                prompt = encode(tokenizer, prompt_text(tokenizer, it))
                self.answers[tuple(prompt)] = (encode(tokenizer, text), it)
                if it["answer_kind"] == ab.MC:  # letters of several tokens are scored forward
                    self.preferred.add(tuple(prompt + self.letters[it["gold"]]))

    def eval(self):
        return self

    def generate(self, input_ids, attention_mask, max_new_tokens, eos_token_id, pad_token_id, **_):
        rows, firsts = [], []
        for ids, mask in zip(input_ids.tolist(), attention_mask.tolist()):
            prompt = tuple(t for t, m in zip(ids, mask) if m)
            answer, item = self.answers[prompt]
            new = (answer + [eos_token_id[0]])[:max_new_tokens]
            rows.append(new)
            first = torch.zeros(self.vocab)
            if item["answer_kind"] == ab.MC:
                first[self.letters[item["gold"]][0]] = 10.0
            firsts.append(first)
        width = max(len(r) for r in rows)
        new = torch.tensor([r + [pad_token_id] * (width - len(r)) for r in rows])
        return SimpleNamespace(
            sequences=torch.cat([input_ids, new], 1), logits=(torch.stack(firsts),)
        )

    def __call__(self, input_ids, attention_mask):
        logits = torch.zeros(*input_ids.shape, self.vocab)
        for row, (ids, mask) in enumerate(zip(input_ids.tolist(), attention_mask.tolist())):
            seq = tuple(t for t, m in zip(ids, mask) if m)
            if seq in self.preferred:
                for pos in range(len(seq) - 1):
                    logits[row, pos, seq[pos + 1]] = 20.0
        return SimpleNamespace(logits=logits)
