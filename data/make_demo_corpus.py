#!/usr/bin/env python3
"""Deterministic generator for featx's bundled probing corpus (data/demo.csv).

Every row is produced by first sampling a set of *labels* (sentiment, tense,
number, negation, mood, length_bucket, split) independently of each other, and
then *realising* an English sentence that carries exactly those labels from a
small hand-written grammar.

Usage:
    python data/make_demo_corpus.py                 # writes data/demo.csv
    python data/make_demo_corpus.py --out X.csv --seed 13 --n 3000

Standard library only; output is byte-identical for the same --seed/--n.
"""

from __future__ import annotations

import argparse
import csv
import random
from pathlib import Path

# --------------------------------------------------------------------------
# Lexicon
# --------------------------------------------------------------------------

# Subject nouns: (singular, plural). All animate, so they can both hold
# opinions ("... loved the film") and be evaluated ("... was kind").
SUBJECTS_TRAIN = [
    ("teacher", "teachers"), ("student", "students"), ("doctor", "doctors"),
    ("nurse", "nurses"), ("farmer", "farmers"), ("artist", "artists"),
    ("critic", "critics"), ("neighbor", "neighbors"), ("child", "children"),
    ("man", "men"), ("person", "people"), ("baker", "bakers"),
    ("lawyer", "lawyers"), ("driver", "drivers"), ("singer", "singers"),
    ("writer", "writers"), ("judge", "judges"), ("soldier", "soldiers"),
    ("officer", "officers"), ("manager", "managers"), ("engineer", "engineers"),
    ("scientist", "scientists"), ("actor", "actors"), ("player", "players"),
    ("coach", "coaches"), ("tourist", "tourists"), ("visitor", "visitors"),
    ("customer", "customers"), ("worker", "workers"), ("parent", "parents"),
    ("guest", "guests"), ("reporter", "reporters"),
]
# Held out: these subject nouns appear ONLY in the test split.
SUBJECTS_TEST = [
    ("woman", "women"), ("librarian", "librarians"), ("sailor", "sailors"),
    ("dancer", "dancers"), ("senator", "senators"), ("chef", "chefs"),
    ("pilot", "pilots"), ("musician", "musicians"),
]

# Evaluative transitive verbs: (base, 3rd-person singular present, past).
VERBS_POS_TRAIN = [
    ("love", "loves", "loved"), ("enjoy", "enjoys", "enjoyed"),
    ("praise", "praises", "praised"), ("admire", "admires", "admired"),
    ("like", "likes", "liked"), ("appreciate", "appreciates", "appreciated"),
    ("welcome", "welcomes", "welcomed"), ("support", "supports", "supported"),
    ("trust", "trusts", "trusted"), ("recommend", "recommends", "recommended"),
    ("celebrate", "celebrates", "celebrated"), ("value", "values", "valued"),
]
VERBS_NEG_TRAIN = [
    ("hate", "hates", "hated"), ("dislike", "dislikes", "disliked"),
    ("criticize", "criticizes", "criticized"), ("reject", "rejects", "rejected"),
    ("fear", "fears", "feared"), ("resent", "resents", "resented"),
    ("despise", "despises", "despised"), ("mock", "mocks", "mocked"),
    ("distrust", "distrusts", "distrusted"), ("condemn", "condemns", "condemned"),
    ("dread", "dreads", "dreaded"), ("deplore", "deplores", "deplored"),
]
# Held out for the test split only.
VERBS_POS_TEST = [
    ("adore", "adores", "adored"), ("cherish", "cherishes", "cherished"),
    ("applaud", "applauds", "applauded"),
]
VERBS_NEG_TEST = [
    ("loathe", "loathes", "loathed"), ("detest", "detests", "detested"),
    ("scorn", "scorns", "scorned"),
]

# Evaluative predicate adjectives (applicable to people).
ADJS_POS_TRAIN = [
    "kind", "friendly", "generous", "brilliant", "honest", "cheerful",
    "helpful", "patient", "charming", "polite", "brave", "reliable",
]
ADJS_NEG_TRAIN = [
    "rude", "cruel", "lazy", "dishonest", "selfish", "arrogant",
    "careless", "unpleasant", "hostile", "grumpy", "nasty", "impatient",
]
ADJS_POS_TEST = ["wonderful", "gentle", "talented"]
ADJS_NEG_TEST = ["awful", "horrible", "stubborn"]

# Objects of the evaluative verbs: (singular, plural). Shared by both splits.
OBJECTS = [
    ("plan", "plans"), ("film", "films"), ("book", "books"), ("song", "songs"),
    ("idea", "ideas"), ("meal", "meals"), ("speech", "speeches"),
    ("show", "shows"), ("game", "games"), ("trip", "trips"),
    ("project", "projects"), ("painting", "paintings"),
    ("proposal", "proposals"), ("story", "stories"), ("decision", "decisions"),
    ("festival", "festivals"), ("menu", "menus"), ("design", "designs"),
    ("rule", "rules"), ("policy", "policies"),
]

# Neutral (non-evaluative) modifiers, used only to vary length.
SUBJECT_ADJS = ["young", "old", "local", "new", "retired", "senior"]
OBJECT_ADJS = ["new", "old", "recent", "latest", "original", "final"]
# Distractor PP on the subject: (preposition, singular, plural). The PP noun's
# number is sampled independently of the subject's number ("The teacher with
# the keys ...", "The keys ..." style attraction errors for a shallow probe).
DISTRACTOR_PPS = [
    ("with", "key", "keys"), ("with", "dog", "dogs"),
    ("with", "bicycle", "bicycles"), ("with", "umbrella", "umbrellas"),
    ("from", "village", "villages"), ("from", "farm", "farms"),
    ("from", "island", "islands"), ("near", "window", "windows"),
    ("behind", "counter", "counters"), ("beside", "fountain", "fountains"),
]
# Subject relative clauses: (singular-agreeing, plural-agreeing). Always
# present tense, so they are a distractor for the tense probe.
SUBJECT_RCS = [
    ("who lives nearby", "who live nearby"),
    ("who works downtown", "who work downtown"),
    ("who owns the bakery", "who own the bakery"),
    ("who teaches at the school", "who teach at the school"),
    ("who runs the shop", "who run the shop"),
]
# Degree adverbs (polarity-neutral intensifiers).
VERB_ADVS = ["really", "truly", "genuinely"]
# No "quite" for adjectives: "not quite lazy" would not flip the polarity.
ADJ_ADVS = ["very", "really", "truly"]
# Sentence-final, tense-neutral adjuncts (2-5 words).
ADJUNCTS = [
    "at the meeting", "in the village", "at the festival", "in the morning",
    "after the storm", "at the station", "during the long winter",
    "in the small town", "at the end of the day", "on most weekends",
    "at the annual fair", "in the old theater",
]

# --------------------------------------------------------------------------
# Label space
# --------------------------------------------------------------------------

LABELS = {
    "sentiment": ["positive", "negative"],
    "tense": ["past", "present", "future"],
    "number": ["singular", "plural"],
    "negation": ["negated", "affirmative"],
    "mood": ["question", "statement"],
    "length_bucket": ["short", "medium", "long"],
}
SPLIT_FRACTIONS = {"train": 0.8, "test": 0.2}
COLUMNS = ["text", *LABELS, "split"]

# Length buckets by whitespace-separated word count (punctuation attached).
SHORT_MAX = 7    # short: <= 7 words
MEDIUM_MAX = 11  # medium: 8..11 words; long: >= 12 words

# Probability of each optional modifier per length target; the realiser then
# rejection-samples until the word count falls in the target bucket.
MODIFIER_PROB = {"short": 0.1, "medium": 0.4, "long": 0.8}


def length_bucket(text: str) -> str:
    n = len(text.split())
    if n <= SHORT_MAX:
        return "short"
    if n <= MEDIUM_MAX:
        return "medium"
    return "long"


# --------------------------------------------------------------------------
# Realisation
# --------------------------------------------------------------------------

def _lexicon(split: str):
    """Subject nouns / evaluative lemmas available to a split."""
    if split == "test":
        return {
            "subjects": SUBJECTS_TEST,
            "verbs": {"positive": VERBS_POS_TEST, "negative": VERBS_NEG_TEST},
            "adjs": {"positive": ADJS_POS_TEST, "negative": ADJS_NEG_TEST},
        }
    return {
        "subjects": SUBJECTS_TRAIN,
        "verbs": {"positive": VERBS_POS_TRAIN, "negative": VERBS_NEG_TRAIN},
        "adjs": {"positive": ADJS_POS_TRAIN, "negative": ADJS_NEG_TRAIN},
    }


def _subject_np(attrs: dict, lex: dict, rng: random.Random, p: float) -> str:
    plural = attrs["number"] == "plural"
    noun = rng.choice(lex["subjects"])[plural]
    words = ["the"]
    if rng.random() < p:
        words.append(rng.choice(SUBJECT_ADJS))
    words.append(noun)
    if rng.random() < p:  # distractor PP, number independent of the subject
        prep, d_sg, d_pl = rng.choice(DISTRACTOR_PPS)
        words += [prep, "the", d_pl if rng.random() < 0.5 else d_sg]
    elif rng.random() < p / 2:  # relative clause agreeing with the subject
        words.append(rng.choice(SUBJECT_RCS)[plural])
    return " ".join(words)


def _object_np(rng: random.Random, p: float) -> str:
    words = ["the"]
    if rng.random() < p:
        words.append(rng.choice(OBJECT_ADJS))
    words.append(rng.choice(OBJECTS)[rng.random() < 0.5])
    return " ".join(words)


def realise(attrs: dict, rng: random.Random) -> str:
    """Build one sentence carrying exactly the labels in ``attrs``.

    Sentiment is the polarity of the evaluative predicate (verb or adjective)
    XOR negation, so e.g. "The critics did not love the film." is negative.
    Two frames, chosen at random:
      verb frame:   SUBJ [AUX] [not] [ADV] V-EVAL OBJ [ADJUNCT]
      copula frame: SUBJ BE [not] [ADV] ADJ-EVAL [ADJUNCT]
    Questions are yes/no questions with subject-aux inversion and do-support;
    negated questions keep an uncontracted "not" after the subject
    ("Did the critics not love the film?", "Will the dog not be kind?").
    The length target is met by rejection sampling over optional modifiers.
    """
    lex = _lexicon(attrs["split"])
    negated = attrs["negation"] == "negated"
    question = attrs["mood"] == "question"
    plural = attrs["number"] == "plural"
    tense = attrs["tense"]
    # Lexical polarity is flipped under negation so that the label holds.
    lex_pol = attrs["sentiment"]
    if negated:
        lex_pol = "negative" if lex_pol == "positive" else "positive"
    p = MODIFIER_PROB[attrs["length_bucket"]]

    for _ in range(1000):
        subj = _subject_np(attrs, lex, rng, p)
        adv_p = rng.random() < p
        adjunct = rng.choice(ADJUNCTS) if rng.random() < p else None

        if rng.random() < 0.5:  # ---- verb frame
            base, s3, past = rng.choice(lex["verbs"][lex_pol])
            obj = _object_np(rng, p)
            adv = [rng.choice(VERB_ADVS)] if adv_p else []
            if tense == "future":
                aux, finite = "will", None
            elif tense == "past":
                aux, finite = "did", past
            else:
                aux = "do" if plural else "does"
                finite = base if plural else s3
            needs_aux = question or negated or tense == "future"
            neg = ["not"] if negated else []
            if not needs_aux:
                # plain affirmative statement, past/present: no do-support
                words = [subj, *adv, finite, obj]
            elif question:
                words = [aux, subj, *neg, *adv, base, obj]
            else:
                words = [subj, aux, *neg, *adv, base, obj]
        else:  # ---- copula frame
            adj = rng.choice(lex["adjs"][lex_pol])
            adv = [rng.choice(ADJ_ADVS)] if adv_p else []
            neg = ["not"] if negated else []
            if tense == "future":
                if question:
                    words = ["will", subj, *neg, "be", *adv, adj]
                else:
                    words = [subj, "will", *neg, "be", *adv, adj]
            else:
                if tense == "past":
                    be = "were" if plural else "was"
                else:
                    be = "are" if plural else "is"
                if question:
                    words = [be, subj, *neg, *adv, adj]
                else:
                    words = [subj, be, *neg, *adv, adj]

        if adjunct:
            words.append(adjunct)
        text = " ".join(words)
        text = text[0].upper() + text[1:] + ("?" if question else ".")
        if length_bucket(text) == attrs["length_bucket"]:
            return text
    raise RuntimeError(f"could not realise {attrs}")


# --------------------------------------------------------------------------
# Label sampling
# --------------------------------------------------------------------------

def balanced_column(values: list[str], n: int, rng: random.Random,
                    weights: list[float] | None = None) -> list[str]:
    """n labels with (near-)exact target proportions, randomly permuted.

    Each column is shuffled independently, so label columns are independent
    of one another up to sampling noise.
    """
    if weights is None:
        weights = [1.0] * len(values)
    total = sum(weights)
    counts = [int(n * w / total) for w in weights]
    for i in rng.sample(range(len(values)), n - sum(counts)):
        counts[i] += 1
    col = [v for v, c in zip(values, counts) for _ in range(c)]
    rng.shuffle(col)
    return col


def generate(n: int, seed: int) -> list[dict]:
    rng = random.Random(seed)
    cols = {name: balanced_column(vals, n, rng)
            for name, vals in LABELS.items()}
    cols["split"] = balanced_column(
        list(SPLIT_FRACTIONS), n, rng, list(SPLIT_FRACTIONS.values()))
    rows, seen = [], set()
    for i in range(n):
        attrs = {name: col[i] for name, col in cols.items()}
        for _ in range(1000):  # resample the realisation until unseen
            text = realise(attrs, rng)
            if text not in seen:
                break
        else:
            raise RuntimeError(f"could not find a new sentence for {attrs}")
        seen.add(text)
        rows.append({"text": text, **attrs})
    return rows


def main(argv: list[str] | None = None) -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--out", type=Path,
                    default=Path(__file__).resolve().parent / "demo.csv")
    ap.add_argument("--seed", type=int, default=13)
    ap.add_argument("--n", type=int, default=3000)
    args = ap.parse_args(argv)

    rows = generate(args.n, args.seed)
    args.out.parent.mkdir(parents=True, exist_ok=True)
    with open(args.out, "w", encoding="utf-8", newline="") as f:
        w = csv.DictWriter(f, fieldnames=COLUMNS, lineterminator="\n")
        w.writeheader()
        w.writerows(rows)
    print(f"wrote {len(rows)} rows to {args.out}")


if __name__ == "__main__":
    main()
