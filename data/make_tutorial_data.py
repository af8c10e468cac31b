"""Write the tutorials' small inputs: a sentence-pairs CSV and a two-file CoNLL-U treebank.

Everything is synthetic, from a small hand-written grammar (standard library only, seeded), so the files can
be redistributed with featx under its licence and every label is known exactly:

- ``pairs.csv``: 240 sentence pairs with ``sentence_a``, ``sentence_b``, ``entailment`` (entailment,
  neutral, contradiction; 80 each), ``relatedness`` (1.0 to 5.0) and ``split`` (192 train, 48 test). The split
  takes whole groups of pairs linked by a shared sentence (featx's ``--group @texts``), so no sentence is in
  both train and test pairs; it is drawn from its own generator (seed 11).
- ``treebank-train.conllu`` (200 sentences) and ``treebank-test.conllu`` (80): UD-style sentences with UPOS,
  XPOS, FEATS (Number, Tense, Definite, ...), HEAD and DEPREL; some word forms are nouns in one sentence and
  verbs in another (``shows``, ``walks``, ``plays``), so a word's tag is not always its most frequent one.

    python data/make_tutorial_data.py          # rewrites the three files beside this script
"""

from __future__ import annotations

import csv
import random
from pathlib import Path

HERE = Path(__file__).resolve().parent

PEOPLE = {"boy": "child", "girl": "child", "man": "person", "woman": "person", "chef": "cook", "dog": "animal"}
ACTIONS = [
    ("is playing", "is not playing", "in the park"),
    ("is cooking", "is not cooking", "in the kitchen"),
    ("is running", "is not running", "on the beach"),
    ("is reading", "is not reading", "in the library"),
    ("is singing", "is not singing", "on the stage"),
    ("is sleeping", "is not sleeping", "on the sofa"),
]
ADJECTIVES = ["young", "tall", "happy", "small", "old"]


def pair(kind: str, rng: random.Random) -> tuple[str, str, float]:
    """One pair of the given kind and its relatedness score."""
    person = rng.choice(sorted(PEOPLE))
    adjective = rng.choice(ADJECTIVES)
    verb, negated, place = rng.choice(ACTIONS)
    a = f"A {adjective} {person} {verb} {place}"
    if kind == "entailment":
        b = rng.choice(
            [f"A {person} {verb} {place}", f"A {PEOPLE[person]} {verb} {place}", f"A {adjective} {person} {verb}"]
        )
        score = rng.uniform(3.9, 5.0)
    elif kind == "contradiction":
        b = rng.choice([f"A {adjective} {person} {negated} {place}", f"There is no {person} {verb} {place}"])
        score = rng.uniform(3.0, 4.3)
    else:
        other_verb, _, other_place = rng.choice([action for action in ACTIONS if action[0] != verb])
        other = rng.choice([p for p in sorted(PEOPLE) if p != person])
        b = rng.choice([f"A {person} {other_verb} {other_place}", f"A {other} {other_verb} {place}"])
        score = rng.uniform(1.0, 3.2)
    return a, b, round(score, 1)


def write_pairs(path: Path, rng: random.Random, n_per_kind: int = 80, split_seed: int = 11) -> None:
    kinds = ["entailment", "neutral", "contradiction"] * n_per_kind
    rng.shuffle(kinds)
    # The split used to be shuffled here, pair by pair, which put pairs sharing a sentence on both sides. The
    # shuffle is kept only for its draws: ``rng`` goes on to build the treebank, which must not change.
    rng.shuffle(["train"] * (len(kinds) * 4 // 5) + ["test"] * (len(kinds) // 5))
    seen: set[tuple[str, str]] = set()
    pairs = []
    for kind in kinds:
        a, b, score = pair(kind, rng)
        while (a, b) in seen:
            a, b, score = pair(kind, rng)
        seen.add((a, b))
        pairs.append((a, b, score, kind))
    splits = split_by_groups([(a, b) for a, b, *_ in pairs], len(kinds) // 5, random.Random(split_seed))
    with path.open("w", newline="", encoding="utf-8") as handle:
        writer = csv.writer(handle, lineterminator="\n")
        writer.writerow(["pair_id", "sentence_a", "sentence_b", "relatedness", "entailment", "split"])
        for number, ((a, b, score, kind), split) in enumerate(zip(pairs, splits, strict=True), start=1):
            writer.writerow([number, a, b, f"{score:.1f}", kind, split])


def split_by_groups(pairs: list[tuple[str, str]], n_test: int, rng: random.Random) -> list[str]:
    """``train`` or ``test`` for every pair, whole groups at a time: a group is the pairs linked by a shared
    sentence, as sentence a or b, in chains (featx's ``--group @texts``). The groups, in a random order, go to
    ``test`` while they fit in ``n_test`` pairs, the rest to ``train``."""
    parent = list(range(len(pairs)))

    def root(row: int) -> int:
        while parent[row] != row:
            parent[row] = parent[parent[row]]
            row = parent[row]
        return row

    first: dict[str, int] = {}  # each sentence's first pair
    for row, (a, b) in enumerate(pairs):
        for sentence in (a, b):
            parent[root(row)] = root(first.setdefault(sentence, row))
    groups: dict[int, list[int]] = {}
    for row in range(len(pairs)):
        groups.setdefault(root(row), []).append(row)
    order = list(groups.values())  # in the order of their first pairs
    rng.shuffle(order)
    splits, left = ["train"] * len(pairs), n_test
    for rows in order:
        if len(rows) <= left:
            left -= len(rows)
            for row in rows:
                splits[row] = "test"
    return splits


# (form, upos, xpos, feats) of the words the treebank's sentences are built from
NOUNS = [("farmer", "farmers"), ("show", "shows"), ("walk", "walks"), ("play", "plays"), ("teacher", "teachers")]
NOUNS += [("house", "houses"), ("river", "rivers"), ("city", "cities"), ("letter", "letters"), ("child", "children")]
VERBS = [("show", "shows", "showed"), ("walk", "walks", "walked"), ("play", "plays", "played")]
VERBS += [("like", "likes", "liked"), ("visit", "visits", "visited"), ("paint", "paints", "painted")]
ADJS = ["new", "old", "long", "quiet", "famous"]
PLACES = ["station", "market", "garden", "school"]


def noun_phrase(rng: random.Random, role: str, head: int, start: int) -> list[tuple]:
    """Determiner, optional adjective and noun; words are (form, upos, xpos, feats, head, deprel)."""
    singular, plural = rng.choice(NOUNS)
    number = rng.choice(["Sing", "Plur"])
    definite = "Def" if number == "Plur" or rng.random() < 0.6 else "Ind"
    determiner = "the" if definite == "Def" else "a"
    noun_at = start + (2 if rng.random() < 0.5 else 1)
    words = [(determiner, "DET", "DT", f"Definite={definite}|PronType=Art", noun_at, "det")]
    if noun_at == start + 2:
        words.append((rng.choice(ADJS), "ADJ", "JJ", "Degree=Pos", noun_at, "amod"))
    form = singular if number == "Sing" else plural
    words.append((form, "NOUN", "NN" if number == "Sing" else "NNS", f"Number={number}", head, role))
    return words


def transitive(rng: random.Random) -> list[tuple]:
    """``The old farmer shows the new letters .``: subject, verb (present or past), object."""
    subject = noun_phrase(rng, "nsubj", -1, 1)
    verb_at = len(subject) + 1
    subject = [(*word[:4], verb_at if word[5] == "nsubj" else word[4], word[5]) for word in subject]
    base, third, past = rng.choice(VERBS)
    plural_subject = "Number=Plur" in subject[-1][3]
    if rng.random() < 0.5:
        verb = (past, "VERB", "VBD", "Mood=Ind|Tense=Past|VerbForm=Fin", 0, "root")
    elif plural_subject:
        verb = (base, "VERB", "VBP", "Mood=Ind|Tense=Pres|VerbForm=Fin", 0, "root")
    else:
        verb = (third, "VERB", "VBZ", "Mood=Ind|Number=Sing|Person=3|Tense=Pres|VerbForm=Fin", 0, "root")
    obj = noun_phrase(rng, "obj", verb_at, verb_at + 1)
    return [*subject, verb, *obj, (".", "PUNCT", ".", "_", verb_at, "punct")]


def motion(rng: random.Random) -> list[tuple]:
    """``She walked to the market .``: pronoun, verb, preposition, determiner, noun."""
    pronoun, number = rng.choice([("She", "Sing"), ("He", "Sing"), ("They", "Plur"), ("We", "Plur")])
    person = "1" if pronoun == "We" else "3"
    case = f"Case=Nom|Number={number}|Person={person}|PronType=Prs"
    verb = rng.choice(["walked", "ran", "drove", "went"])
    return [
        (pronoun, "PRON", "PRP", case, 2, "nsubj"),
        (verb, "VERB", "VBD", "Mood=Ind|Tense=Past|VerbForm=Fin", 0, "root"),
        ("to", "ADP", "IN", "_", 5, "case"),
        ("the", "DET", "DT", "Definite=Def|PronType=Art", 5, "det"),
        (rng.choice(PLACES), "NOUN", "NN", "Number=Sing", 2, "obl"),
        (".", "PUNCT", ".", "_", 2, "punct"),
    ]


def copula(rng: random.Random) -> list[tuple]:
    """``The houses were very quiet .``: subject, copula, adverb, adjective (the root)."""
    subject = noun_phrase(rng, "nsubj", -1, 1)
    root = len(subject) + 3
    subject = [(*word[:4], root if word[5] == "nsubj" else word[4], word[5]) for word in subject]
    plural = "Number=Plur" in subject[-1][3]
    tense = rng.choice(["Pres", "Past"])
    forms = {("Pres", False): ("is", "VBZ"), ("Pres", True): ("are", "VBP")}
    forms |= {("Past", False): ("was", "VBD"), ("Past", True): ("were", "VBD")}
    form, xpos = forms[(tense, plural)]
    return [
        *subject,
        (form, "AUX", xpos, f"Mood=Ind|Tense={tense}|VerbForm=Fin", root, "cop"),
        (rng.choice(["very", "quite", "rather"]), "ADV", "RB", "_", root, "advmod"),
        (rng.choice(ADJS), "ADJ", "JJ", "Degree=Pos", 0, "root"),
        (".", "PUNCT", ".", "_", root, "punct"),
    ]


def sentence_block(sent_id: str, words: list[tuple]) -> str:
    """One CoNLL-U sentence: comments and one line of ten fields per word."""
    words = [(words[0][0].capitalize(), *words[0][1:]), *words[1:]]
    text = " ".join(word[0] for word in words[:-1]) + words[-1][0]
    lines = [f"# sent_id = {sent_id}", f"# text = {text}"]
    for index, (form, upos, xpos, feats, head, deprel) in enumerate(words, start=1):
        misc = "SpaceAfter=No" if index == len(words) - 1 else "_"
        lines.append("\t".join([str(index), form, "_", upos, xpos, feats, str(head), deprel, "_", misc]))
    return "\n".join(lines) + "\n\n"


def write_treebank(path: Path, prefix: str, n: int, rng: random.Random, seen: set[str]) -> None:
    blocks = []
    while len(blocks) < n:
        words = rng.choice([transitive, transitive, motion, copula])(rng)
        key = " ".join(word[0] for word in words)
        if key in seen:
            continue
        seen.add(key)
        blocks.append(sentence_block(f"{prefix}-{len(blocks) + 1}", words))
    path.write_text("".join(blocks), encoding="utf-8", newline="\n")


def main() -> None:
    rng = random.Random(7)
    write_pairs(HERE / "pairs.csv", rng)
    seen: set[str] = set()
    write_treebank(HERE / "treebank-train.conllu", "train", 200, rng, seen)
    write_treebank(HERE / "treebank-test.conllu", "test", 80, rng, seen)


if __name__ == "__main__":
    main()
