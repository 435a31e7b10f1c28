"""The micro corpus generator as a package: module names say what each generates, the
README sits beside the code, and every link to it resolves."""

from __future__ import annotations

import importlib
import re
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[3]
# ability -> the module of doit.data.micro that generates it (one module per family)
FAMILY = {
    "biology": "knowledge",
    "history": "knowledge",
    "chinese": "knowledge",
    "understanding": "in_context",
    "reasoning": "in_context",
    "math": "procedural",
    "code": "procedural",
    "creative_writing": "open_ended",
    "role_play": "open_ended",
    "ethics": "ethics",
}
README_LINK = re.compile(r"[\w./]*micro/README\.md")


def test_build_micro_is_importable_from_the_package():
    micro = importlib.import_module("doit.data.micro")
    assert Path(micro.__file__).name == "__init__.py"
    assert micro.build_micro is importlib.import_module("doit.data.micro.build").build_micro


def test_each_ability_is_generated_by_the_module_of_its_family():
    specs = importlib.import_module("doit.data.micro.build").SPECS
    assert {spec.ability.key for spec in specs} == set(FAMILY)
    for spec in specs:
        assert spec.make.__module__ == f"doit.data.micro.{FAMILY[spec.ability.key]}"


@pytest.mark.parametrize(
    ("module", "names"),
    [
        ("ood", ["ood_sets"]),
        ("chat", ["general_instructions"]),
        ("tokenizer", ["train_tokenizer"]),
        ("world", ["build_world", "split_facts"]),
        ("prose", ["pretrain_documents"]),
        ("daily", ["daily_doc"]),
        ("phrases", ["BAD_DEEDS", "GOODS"]),
        ("drafts", ["Draft", "ItemContext", "render_mc", "weighted_choice"]),
    ],
)
def test_the_other_generators_live_where_their_names_say(module, names):
    mod = importlib.import_module(f"doit.data.micro.{module}")
    assert all(hasattr(mod, name) for name in names)


def test_the_readme_sits_beside_the_code_and_every_link_to_it_resolves():
    package_dir = Path(importlib.import_module("doit.data.micro").__file__).parent
    assert (package_dir / "README.md").is_file()
    sources = [ROOT / "README.md", *sorted((ROOT / "doit").rglob("*.py"))]
    links = {(p, link) for p in sources for link in README_LINK.findall(p.read_text("utf-8"))}
    assert links, "no file links the micro README"
    for path, link in sorted(links):
        assert (ROOT / link).is_file(), f"{path.relative_to(ROOT)} links a missing {link}"
