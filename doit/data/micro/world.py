"""The fictional world behind the SYNTHETIC micro DoIT corpus: entities, facts, fact splits.

Every name and value comes from small fixed character pools, so the whole corpus
uses a few hundred distinct Chinese characters. Entities are drawn with a seeded
``random.Random``; nothing depends on set or dict iteration order.

A *fact* is one (group, subject, attribute, value) tuple, e.g. the capital of a
dynasty. Knowledge-recall abilities ask about facts that the pretraining prose
states; ``split_facts`` puts each fact into exactly one of test/valid/train so a
test question never asks about a fact that any ability's train items ask about.
"""

from __future__ import annotations

import random
from dataclasses import dataclass

from doit.data.micro.phrases import IDIOM_MEANINGS

# --- character pools (kept disjoint where a mix-up would blur an entity) ---------
SPECIES_HEADS = tuple("斑纹卷尖圆双独露岩藤棘荧绒冠环角弯扁垂翘")
SPECIES_TAILS = tuple("啾噜叽喳咕嘀嗒呦哞嘤")
DYNASTY_CHARS = tuple("岚澄昱曜琮璟恒泰嘉靖崇熙乾庆禧隆瑞祥钧铭锦绣瑜珩璋琛昶晟煦烨炜焘翊翎骁骅")
SURNAMES = tuple("王李张刘陈杨赵许周吴徐孙胡朱曹邓何郭马罗梁宋郑谢韩唐冯于董萧")
GIVEN_CHARS = tuple("德仁义礼智信忠孝文武元亨贞承继延守敬修谦和正光远之仲伯叔季公")
MODERN_CHARS = tuple("明红刚丽军芳强华梅杰燕波静磊婷涛雯鹏琳浩敏宇萍峰")
TOWN_HEADS = tuple("临清平永安宁丰富兴定长新广顺通怀")
TOWN_TAILS = tuple("州川阳陵城埠")
RIVER_HEADS = tuple("沧洛汾渭泗淮湘沅澧漳汶滦")
TOOL_MATERIALS = tuple("铜铁木竹陶骨玉银")
TOOL_OBJECTS = tuple("铃犁斧锯尺秤鼎灯镜梳笛磨")
IDIOM_CHARS = tuple("风雨云雷霜雪冰火金水土日月星天地江海舟车弓剑刀琴书画酒茶桥门窗衣鞋心手口耳目")
TITLE_HEADS = tuple("春夏秋冬晨暮夜晴")
TITLE_TAILS = tuple("江林歌吟行怨思望")
HERB_HEADS = tuple("苍芷蒲芸蓼荇蘅茱萸苓芩芪")
HERB_TAILS = tuple("草芝苗蕨")

# --- attribute value pools ----------------------------------------------------
CLASSES = ("鸟", "鱼", "虫", "兽", "蛇")
COVERS = {"鸟": "羽毛", "鱼": "鳞片", "虫": "外壳", "兽": "皮毛", "蛇": "鳞片"}
COLOURS = ("红色", "黄色", "蓝色", "绿色", "白色", "黑色", "紫色", "灰色")
HABITATS = ("高山", "湖泊", "森林", "沙漠", "草原", "海边", "洞穴", "沼泽")
FOODS = ("果子", "种子", "小虫", "鱼虾", "树叶", "花蜜", "青草", "苔藓")
AILMENTS = (
    "头痛",
    "咳嗽",
    "发热",
    "腹痛",
    "失眠",
    "牙痛",
    "眼花",
    "脚肿",
    "耳鸣",
    "心慌",
    "气喘",
    "腰酸",
    "口干",
    "手麻",
    "胃胀",
    "盗汗",
)
HERB_PARTS = ("根", "叶", "花", "籽", "茎")
SUBJECTS = ("算术", "书法", "琴艺", "棋艺", "诗文", "绘画", "天文", "礼仪")

# --- sizes ---------------------------------------------------------------------
N_SPECIES = 120
N_DYNASTIES = 36
N_FIGURES = 80
N_IDIOMS = 160
N_POETS = 50
N_HERBS = 40
N_TOWNS = 48
N_SCHOOLS = 30

# Which attributes of each entity group are facts (in this order).
FACT_ATTRS: dict[str, tuple[str, ...]] = {
    "species": ("cls", "colour", "habitat", "food", "lifespan"),
    "dynasty": ("founder", "capital", "start", "years", "next"),
    "figure": ("dynasty", "hometown", "invention"),
    "idiom": ("meaning",),
    "poet": ("title", "dynasty"),
    "herb": ("ailment", "part"),
    "school": ("teacher", "subject"),
    "town": ("river", "gates"),
}
# Attributes whose distractors come from a fixed pool rather than other entities.
VALUE_POOLS: dict[tuple[str, str], tuple[str, ...]] = {
    ("species", "cls"): CLASSES,
    ("species", "colour"): COLOURS,
    ("species", "habitat"): HABITATS,
    ("species", "food"): FOODS,
    ("herb", "ailment"): AILMENTS,
    ("herb", "part"): HERB_PARTS,
    ("school", "subject"): SUBJECTS,
}


@dataclass(frozen=True)
class Fact:
    group: str
    subject: str  # the entity's name
    attr: str
    value: str

    @property
    def key(self) -> tuple[str, str, str]:
        return (self.group, self.subject, self.attr)


@dataclass
class World:
    entities: dict[str, list[dict[str, str]]]  # group -> entities (each has "name")
    people: list[str]  # modern given names (小明 ...) for dialogues and puzzles
    rivers: list[str]

    def facts(self, group: str) -> list[Fact]:
        out = []
        for entity in self.entities[group]:
            for attr in FACT_ATTRS[group]:
                if entity.get(attr):
                    out.append(Fact(group, entity["name"], attr, entity[attr]))
        return out

    def domain(self, group: str, attr: str) -> list[str]:
        """Every value ``attr`` can take (the pool, or the values the entities have)."""
        if (group, attr) in VALUE_POOLS:
            return list(VALUE_POOLS[(group, attr)])
        return sorted({e[attr] for e in self.entities[group] if e.get(attr)})


def _unique_names(rng: random.Random, count: int, make) -> list[str]:
    names: list[str] = []
    seen: set[str] = set()
    while len(names) < count:
        name = make(rng)
        if name not in seen:
            seen.add(name)
            names.append(name)
    return names


def _pair(heads, tails):
    """A name maker: one character from ``heads`` then one from ``tails``."""
    return lambda rng: rng.choice(heads) + rng.choice(tails)


def _person(rng: random.Random) -> str:
    return rng.choice(SURNAMES) + "".join(rng.sample(GIVEN_CHARS, 2))


def _species(rng: random.Random) -> list[dict[str, str]]:
    names = _unique_names(rng, N_SPECIES, _pair(SPECIES_HEADS, SPECIES_TAILS))
    return [
        {
            "name": name,
            "cls": (cls := rng.choice(CLASSES)),
            "cover": COVERS[cls],
            "colour": rng.choice(COLOURS),
            "habitat": rng.choice(HABITATS),
            "food": rng.choice(FOODS),
            "lifespan": str(rng.randint(2, 40)),
        }
        for name in names
    ]


def _dynasties(rng, towns: list[str], founders: list[str]) -> list[dict[str, str]]:
    names = [c + "朝" for c in rng.sample(DYNASTY_CHARS, N_DYNASTIES)]
    capitals = rng.sample(towns, N_DYNASTIES)
    start = rng.randint(100, 300)
    out = []
    for i, name in enumerate(names):
        years = rng.randint(20, 180)
        nxt = names[i + 1] if i + 1 < len(names) else ""
        out.append(
            {
                "name": name,
                "founder": founders[i],
                "capital": capitals[i],
                "start": str(start),
                "years": str(years),
                "next": nxt,
            }
        )
        start += years
    return out


def _figures(rng, names, dynasties, towns) -> list[dict[str, str]]:
    inventions = _unique_names(rng, len(names), _pair(TOOL_MATERIALS, TOOL_OBJECTS))
    return [
        {
            "name": name,
            "dynasty": rng.choice(dynasties)["name"],
            "hometown": rng.choice(towns),
            "invention": inventions[i],
        }
        for i, name in enumerate(names)
    ]


def _idioms(rng: random.Random) -> list[dict[str, str]]:
    texts = _unique_names(rng, N_IDIOMS, lambda r: "".join(r.sample(IDIOM_CHARS, 4)))
    meanings = rng.sample(IDIOM_MEANINGS, N_IDIOMS)
    return [{"name": t, "meaning": m} for t, m in zip(texts, meanings, strict=True)]


def _poets(rng, names, dynasties) -> list[dict[str, str]]:
    titles = _unique_names(rng, len(names), _pair(TITLE_HEADS, TITLE_TAILS))
    return [
        {"name": name, "title": titles[i], "dynasty": rng.choice(dynasties)["name"]}
        for i, name in enumerate(names)
    ]


def _herbs(rng: random.Random) -> list[dict[str, str]]:
    names = _unique_names(rng, N_HERBS, _pair(HERB_HEADS, HERB_TAILS))
    return [
        {"name": n, "ailment": rng.choice(AILMENTS), "part": rng.choice(HERB_PARTS)} for n in names
    ]


def _schools(rng, towns, teachers) -> list[dict[str, str]]:
    sites = rng.sample(towns, N_SCHOOLS)
    return [
        {"name": site + "书院", "teacher": teachers[i], "subject": rng.choice(SUBJECTS)}
        for i, site in enumerate(sites)
    ]


def build_world(seed: int) -> World:
    """The world for ``seed`` (same seed, same world, on any machine)."""
    rng = random.Random(f"micro-world:{seed}")
    towns = _unique_names(rng, N_TOWNS, _pair(TOWN_HEADS, TOWN_TAILS))
    rivers = [h + "河" for h in RIVER_HEADS]
    n_people = N_DYNASTIES + N_FIGURES + N_POETS + N_SCHOOLS
    persons = _unique_names(rng, n_people, _person)
    founders, rest = persons[:N_DYNASTIES], persons[N_DYNASTIES:]
    figure_names, rest = rest[:N_FIGURES], rest[N_FIGURES:]
    poet_names, teachers = rest[:N_POETS], rest[N_POETS:]
    dynasties = _dynasties(rng, towns, founders)
    entities = {
        "species": _species(rng),
        "dynasty": dynasties,
        "figure": _figures(rng, figure_names, dynasties, towns),
        "idiom": _idioms(rng),
        "poet": _poets(rng, poet_names, dynasties),
        "herb": _herbs(rng),
        "school": _schools(rng, towns, teachers),
        "town": [
            {"name": t, "river": rng.choice(rivers), "gates": str(rng.randint(3, 9))} for t in towns
        ],
    }
    people = ["小" + c for c in MODERN_CHARS]
    return World(entities=entities, people=people, rivers=rivers)


SPLITS = ("test", "valid", "train")  # drafting order: held-out splits first


def split_facts(facts: list[Fact], rng: random.Random, held_out: float) -> dict[str, list[Fact]]:
    """Shuffle ``facts`` and hold out a ``held_out`` fraction each for test and valid."""
    order = sorted(facts, key=lambda f: f.key)
    rng.shuffle(order)
    n_held = max(1, round(len(order) * held_out))
    return {
        "test": order[:n_held],
        "valid": order[n_held : 2 * n_held],
        "train": order[2 * n_held :],
    }
