"""A fake causal LM that knows the answers: for checking predict -> score end to end.

``generate`` emits the gold answer (or a chosen wrong one) for each prompt it was told
about; its decoder (what span scoring runs: ``get_decoder``, then ``get_output_embeddings``,
here the identity) gives near-certain next tokens along the sequences it should prefer (the
gold choice, or a distractor; an mc prompt followed by its gold letter) and uniform logits
elsewhere, reading each position's context from the 4D mask it is given.
"""

from types import SimpleNamespace

import torch

from doit.data import kinds as ak
from doit.eval.predict import choice_sequences, encode, letter_sequences, prompt_text


class OracleLM:
    def __init__(self, tokenizer, items, prefer_choice: int = 0):
        self.tok, self.device = tokenizer, torch.device("cpu")
        self.config = SimpleNamespace(max_position_embeddings=512, _attn_implementation="eager")
        self.dtype, self.vocab = torch.float32, len(tokenizer)
        self.answers, self.preferred = {}, set()
        self.letters = letter_sequences(tokenizer)
        for it in items:
            if it["answer_kind"] == ak.OPEN:
                seq, _ = choice_sequences(tokenizer, it, 512)[prefer_choice]
                self.preferred.add(tuple(seq))
            else:
                text = {
                    ak.TF: "正确" if it["gold"] == "T" else "错误",
                    ak.MATH: f"所以 \\boxed{{{it['gold']}}}",
                }.get(it["answer_kind"], it["gold"])
                prompt = encode(tokenizer, prompt_text(tokenizer, it))
                self.answers[tuple(prompt)] = (encode(tokenizer, text), it)
                if it["answer_kind"] == ak.MC:  # letters of several tokens are scored forward
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
            if item["answer_kind"] == ak.MC:
                first[self.letters[item["gold"]][0]] = 10.0
            firsts.append(first)
        width = max(len(r) for r in rows)
        new = torch.tensor([r + [pad_token_id] * (width - len(r)) for r in rows])
        return SimpleNamespace(
            sequences=torch.cat([input_ids, new], 1), logits=(torch.stack(firsts),)
        )

    def get_decoder(self):
        return ContextDecoder(self.vocab, self._next_tokens())

    def get_output_embeddings(self):
        return torch.nn.Identity()

    def _next_tokens(self) -> dict[tuple, set]:
        """Each proper prefix of a preferred sequence -> the tokens that continue it there."""
        nexts = {}
        for seq in self.preferred:
            for cut in range(1, len(seq)):
                nexts.setdefault(seq[:cut], set()).add(seq[cut])
        return nexts


class ContextDecoder:
    """A fake decoder whose hidden state at a position is a vocabulary-sized logit row: 20 for
    each token that ``nexts`` says continues the position's context (the tokens the additive
    4D mask lets it see, itself included, in order), 0 elsewhere."""

    def __init__(self, vocab: int, nexts: dict[tuple, set]):
        self.vocab, self.nexts = vocab, nexts

    def __call__(self, input_ids, attention_mask, **_):
        assert attention_mask.dim() == 4, "span scoring passes a 4D mask"
        rows, width = input_ids.shape
        hidden = torch.zeros(rows, width, self.vocab)
        for row in range(rows):
            ids = input_ids[row].tolist()
            for pos in range(width):
                seen = (attention_mask[row, 0, pos] == 0).nonzero().flatten().tolist()
                for token in self.nexts.get(tuple(ids[i] for i in seen), ()):
                    hidden[row, pos, token] = 20.0
        return SimpleNamespace(last_hidden_state=hidden)
