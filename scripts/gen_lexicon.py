#!/usr/bin/env python3
"""Writes synth/lexicon_data.inc, the embedded lexicon of ordo's synthetic language.

Source: WordNet 3.0 as packaged by Debian (`apt-get install wordnet-base`,
files under /usr/share/wordnet). Run from the repository root:

    python3 scripts/gen_lexicon.py [--wordnet DIR] [--out synth/lexicon_data.inc]

What it takes from WordNet, and why:
  * which lemmas exist in each part of speech (index.noun/verb/adj/adv), keeping
    only plain lower-case alphabetic single words;
  * a frequency for ranking: SemCor tag counts (cntlist.rev) plus how often the
    word's forms occur in WordNet's own glosses and examples (SemCor alone
    never mentions most animals);
  * the semantic class of a noun's most frequent sense (its lexicographer file):
    noun.person and noun.animal are animate, concrete files (artifact, object,
    plant, food, location) give the inanimate "things";
  * verb subcategorisation from the sentence frames of a verb's two most
    frequent senses: "Somebody ----s somebody" (frame 9) = transitive with an
    animate object, "Somebody ----s something" (8) = transitive with a thing,
    "Somebody ----s" (2) or "Somebody ----s PP" (22) = intransitive,
    "Somebody ----s that CLAUSE" (26) in a sense of thinking or saying = takes a
    clausal complement;
  * irregular noun plurals from noun.exc and, from verb.exc, which verbs double
    their final consonant ("stopped") or are irregular.  verb.exc does not say
    which irregular form is the past and which the participle, so irregular
    verbs come from the table IRREGULAR_VERBS below, checked against verb.exc;
    an irregular verb missing from the table is left out (and reported).

Everything else (regular -s/-es/-ies, -ed/-ied) is the rules in this script.
The output is deterministic: the same WordNet gives the same file.
"""
import argparse
import collections
import re
import sys

# How many of each kind the lexicon keeps, most frequent first.
COUNTS = {"animate": 500, "thing": 900, "verb": 1000, "adjective": 600, "adverb": 150}

ANIMATE_FILES = {5, 18}                 # noun.animal, noun.person (and noun.Tops: "person")
THING_FILES = {6, 13, 15, 17, 20}       # noun.artifact, food, location, object, plant

# base past participle, the common irregular English verbs.  Where English has
# both a regular and an irregular form (burned/burnt), the regular one is used;
# so it is for verbs verb.exc lists with an archaic form only (work: wrought).
IRREGULAR_VERBS = """
arise arose arisen; awake awoke awoken; bear bore borne; beat beat beaten;
become became become; begin began begun; bend bent bent; bet bet bet; bid bid bid;
bind bound bound; bite bit bitten; bleed bled bled; blow blew blown; break broke broken;
breed bred bred; bring brought brought; broadcast broadcast broadcast; build built built;
burn burned burned; burst burst burst; buy bought bought; cast cast cast; catch caught caught;
choose chose chosen; cling clung clung; come came come; cost cost cost; creep crept crept;
cut cut cut; deal dealt dealt; dig dug dug; dive dived dived; do did done; draw drew drawn;
dream dreamed dreamed; drink drank drunk; drive drove driven; dwell dwelt dwelt; eat ate eaten;
fall fell fallen; feed fed fed; feel felt felt; fight fought fought; find found found;
fit fitted fitted; flee fled fled; fling flung flung; fly flew flown; forbid forbade forbidden;
forecast forecast forecast; foresee foresaw foreseen; forget forgot forgotten;
forgive forgave forgiven; forsake forsook forsaken; freeze froze frozen; get got gotten;
give gave given; go went gone; grind ground ground; grow grew grown; hang hung hung;
have had had; hear heard heard; hide hid hidden; hit hit hit; hold held held; hurt hurt hurt;
keep kept kept; kneel knelt knelt; knit knitted knitted; know knew known; lay laid laid;
lead led led; lean leaned leaned; leap leaped leaped; learn learned learned; leave left left;
lend lent lent; let let let; light lit lit; lose lost lost; make made made; mean meant meant;
meet met met; mislead misled misled; mistake mistook mistaken; overcome overcame overcome;
overhear overheard overheard; oversee oversaw overseen; overtake overtook overtaken;
overthrow overthrew overthrown; pay paid paid; prove proved proven; put put put; quit quit quit;
read read read; rebuild rebuilt rebuilt; rid rid rid; ride rode ridden; ring rang rung;
rise rose risen; run ran run; say said said; see saw seen; seek sought sought; sell sold sold;
send sent sent; set set set; sew sewed sewn; shake shook shaken; shed shed shed;
shine shone shone; shoot shot shot; show showed shown; shrink shrank shrunk; shut shut shut;
sing sang sung; sink sank sunk; sit sat sat; slay slew slain; sleep slept slept; slide slid slid;
sling slung slung; slit slit slit; smell smelled smelled; sow sowed sown; speak spoke spoken;
speed sped sped; spell spelled spelled; spend spent spent; spill spilled spilled; spin spun spun;
spit spat spat; split split split; spoil spoiled spoiled; spread spread spread;
spring sprang sprung; stand stood stood; steal stole stolen; stick stuck stuck;
sting stung stung; stink stank stunk; stride strode stridden; strike struck struck;
string strung strung; strive strove striven; swear swore sworn; sweep swept swept;
swell swelled swollen; swim swam swum; swing swung swung; take took taken; teach taught taught;
tear tore torn; tell told told; think thought thought; throw threw thrown; thrust thrust thrust;
tread trod trodden; undergo underwent undergone; understand understood understood;
undertake undertook undertaken; uphold upheld upheld; upset upset upset; wake woke woken;
wear wore worn; weave wove woven; weep wept wept; win won won; wind wound wound;
withdraw withdrew withdrawn; withstand withstood withstood; wring wrung wrung;
write wrote written;
address addressed addressed; behold beheld beheld; bless blessed blessed; clothe clothed clothed;
coordinate coordinated coordinated; curse cursed cursed; grip gripped gripped;
heave heaved heaved; melt melted melted; plead pleaded pleaded; repay repaid repaid;
shave shaved shaved; strew strewed strewn; withhold withheld withheld; work worked worked;
bypass bypassed bypassed; gnaw gnawed gnawed; misunderstand misunderstood misunderstood;
override overrode overridden; rewrite rewrote rewritten; sneak sneaked sneaked;
thrive thrived thrived; undo undid undone
"""

# Verbs whose WordNet frames give a class that reads wrongly in the grammar's
# sentences ("the dog thought the cat").
VERB_CLASS_OVERRIDES = {
    "think": "kClausal kIntransitive",
}
# Classes WordNet's frames give but that read wrongly, removed by hand.
VERB_CLASS_REMOVALS = {
    "kTransitiveAnimate": """use form apply report describe deal record enable supply furnish
                             install schedule quote translate cite count divide acquire display
                             locate address alter name occupy transfer""",
    "kIntransitive": "accord associate belong differ qualify benefit yield dominate aim",
    "kClausal": """choose set derive point record arrange compute figure expose penetrate
                   evidence will weigh rule mind snap insure""",
}

# Noun plurals where noun.exc lists an archaic or specialised form first, or
# where English uses a suppletive plural that WordNet does not list.
PLURAL_OVERRIDES = {"person": "people", "die": "dice", "diva": "divas", "genius": "geniuses",
                    "fish": "fish", "sheep": "sheep", "deer": "deer", "salmon": "salmon",
                    "trout": "trout", "moose": "moose", "bison": "bison", "swine": "swine",
                    "cod": "cod", "aircraft": "aircraft", "spacecraft": "spacecraft"}

# Hypernyms an animate noun's first sense must descend from: animal and person.
# (noun.animal also files animal parts such as "wing" and "claw".)
ANIMATE_ROOTS = {"00015388", "00007846"}

# Words the frequency ranking would admit but that the grammar cannot use as
# plain content words: function-word-like adjectives and adverbs, copulas and
# auxiliaries, verbs whose forms are ambiguous (lie: lay/lied), and slurs or
# vulgar words.
BLOCK = {
    "noun": """people folk folks kind sort type member thing part group self one ones
               nigger nigga negro coon darky spic chink gook kike wop dago jap wetback honky
               faggot fag dyke queer homo whore slut bitch bastard cunt prick dick twat
               shit asshole arse ass bugger tit wanker retard idiot moron imbecile cretin
               spastic cripple midget harlot hooker prostitute pimp homosexual deviate
               invalid addict diabetic virus microorganism pathogen bacillus protozoan
               protoctist actinomycete spirochete flagellate parasite fetus larva
               cooky plier screw grind hire pivot trailer transmitter tumbler antique pop
               mount extra miss shrink creep chela prey fossil mate convert alternate
               initiate transient bore tease sucker stud pro drunk ward picket amazon cutter
               striker jumper courser batter carrier liberal fascist terrorist extremist
               nationalist fundamentalist socialist capitalist communist atheist heretic
               militant insurgent dissident virgin gypsy aborigine philistine slave
               state system side end position cell source direction structure agent art
               piece product device base cover surface area place region scene site spot
               origin variable constituent addition strip layer opening tip physic empty
               round stand tract combine upright outline segment subdivision obstruction
               implement load stretch frame post string handle cross block bar treat
               draw sole spoke die fan bow wash seal match tie watch mine beat reach
               contraceptive brothel vagabond commuter wildcat calculus capillary electron
               proton photon ion spore membrane cavity import innovation commodity
               micrometeorite trapping munition diet dose trend derivation endpoint latitude
               stratum hemisphere seat bottom underside exterior orbit locality zone
               reservation center edge heaven interface motif pa""",
    "verb": """be have do get seem become appear remain let mean include provide base
               range vary cost lie lay tend result concern involve represent indicate
               contain exist occur happen require determine need want like wish hope
               fuck screw piss shit""",
    "adjective": """other same such many few much more most last first next only own
                    certain able unable several various different whole main particular
                    real total due sure likely general possible necessary former latter
                    further least less little else very own given entire mere all some
                    every each any another enough half following known left like still far
                    down above back home well outside front top past present near close anti
                    damn damned queer gay concerned involved interested related needed based
                    located required entitled bound million hundred thousand dozen nonspecific
                    unadjusted unstructured autonomic aerated distal up underway negro pseudo
                    mid side key live even born shut sound extra round double literal definite
                    indefinite prior initial preceding overall corresponding chief principal
                    daily weekly annual downtown forward middle preliminary secondary probable
                    potential detectable observed insoluble lighted covered dressed connected
                    continued changing increasing working surrounding valued marked developed
                    established structured learned composed absorbed charged engaged delayed
                    no""",
    "adverb": """only really nearly probably certainly actually simply merely largely
                 mostly hardly likely fairly rarely particularly especially generally
                 relatively usually completely entirely exactly extremely highly
                 approximately roughly nearly partly slightly greatly truly equally
                 necessarily possibly apparently presumably obviously clearly
                 respectively finally initially originally previously subsequently
                 currently recently eventually ultimately immediately directly
                 early daily only likely unlikely fully virtually essentially
                 primarily mainly chiefly basically precisely definitely absolutely
                 totally utterly perfectly increasingly considerably substantially
                 significantly somewhat quite rather scarcely barely fly ugly
                 holy jolly silly lonely lovely friendly elderly surely evidently
                 unfortunately accordingly consequently conversely seemingly solely duly
                 inevitably conceivably fortunately paradoxically similarly specifically
                 commonly ordinarily typically lately comparatively historically
                 academically algebraically annually microscopically experimentally
                 empirically linearly proportionately inversely centrally financially
                 commercially sexually vitally literally exclusively individually partially
                 specially ideally realistically uniquely indirectly invariably wholly
                 mentally physically appreciably unanimously sufficiently satisfactorily
                 adequately vastly tremendously remarkably incredibly surprisingly
                 fundamentally radically profoundly drunkenly madly""",
}

WORD = re.compile(r"^[a-z]{2,}$")


def block(kind):
    return set(BLOCK[kind].split())


def read_lines(path):
    with open(path, encoding="latin-1") as f:
        for line in f:
            if not line.startswith("  "):  # the licence header lines start with two spaces
                yield line.rstrip("\n")


class WordNet:
    """The parts of WordNet the lexicon needs, loaded once."""

    POS = {"n": "noun", "v": "verb", "a": "adj", "r": "adv"}

    def __init__(self, root):
        self.root = root
        self.semcor = collections.Counter()   # (lemma, pos letter) -> tag count
        self.gloss = collections.Counter()    # word form -> occurrences in glosses
        self.synsets = {}                     # (pos letter, offset) -> dict
        self.index = {}                       # (lemma, pos letter) -> [offsets by frequency]
        self.exceptions = {"n": collections.defaultdict(list), "v": collections.defaultdict(list)}
        self._read_counts()
        for p in "nvar":
            self._read_data(p)
            self._read_index(p)
        self.adjective_forms = {line.split()[0] for line in read_lines(f"{root}/adj.exc")}
        for p, name in (("n", "noun"), ("v", "verb")):
            for line in read_lines(f"{root}/{name}.exc"):
                form, *bases = line.split()
                for b in bases:
                    self.exceptions[p][b].append(form)

    def _read_counts(self):
        pos_of_type = {"1": "n", "2": "v", "3": "a", "4": "r", "5": "a"}
        for line in read_lines(f"{self.root}/cntlist.rev"):
            key, _, count = line.split()
            lemma, rest = key.split("%")
            self.semcor[(lemma, pos_of_type[rest[0]])] += int(count)

    def _read_data(self, p):
        for line in read_lines(f"{self.root}/data.{self.POS[p]}"):
            head, _, gloss = line.partition("|")
            for token in re.findall(r"[a-z]+", gloss.lower()):
                self.gloss[token] += 1
            f = head.split()
            offset, lexfile, n_words = f[0], int(f[1]), int(f[3], 16)
            words = [f[4 + 2 * i] for i in range(n_words)]
            i = 4 + 2 * n_words
            n_ptrs = int(f[i])
            pointers = [(f[i + 1 + 4 * k], f[i + 2 + 4 * k]) for k in range(n_ptrs)]
            i += 1 + 4 * n_ptrs
            frames = collections.defaultdict(set)
            if p == "v" and i < len(f):
                for k in range(int(f[i])):
                    frame, word_num = int(f[i + 2 + 3 * k]), int(f[i + 3 + 3 * k], 16)
                    for w in (words if word_num == 0 else [words[word_num - 1]]):
                        frames[w.lower()].add(frame)
            self.synsets[(p, offset)] = {"offset": offset, "lexfile": lexfile, "words": words,
                                         "pointers": pointers, "frames": frames}

    def _read_index(self, p):
        for line in read_lines(f"{self.root}/index.{self.POS[p]}"):
            f = line.split()
            n_senses = int(f[2])
            self.index[(f[0], p)] = f[-n_senses:]

    def senses(self, lemma, p):
        return [self.synsets[(p, o)] for o in self.index.get((lemma, p), [])]

    def descends_from(self, p, offset, roots):
        """Whether a synset has one of `roots` among its hypernyms (or is one)."""
        todo, seen = [offset], set()
        while todo:
            o = todo.pop()
            if o in roots:
                return True
            if o not in seen:
                seen.add(o)
                todo += [t for sym, t in self.synsets[(p, o)]["pointers"] if sym in ("@", "@i")]
        return False

    def lemmas(self, p):
        return sorted(l for (l, q) in self.index if q == p and WORD.match(l))


# ---- English morphology -------------------------------------------------------

VOWELS = set("aeiou")


def regular_plural(noun):
    if re.search(r"(s|x|z|ch|sh)$", noun):
        return noun + "es"
    if re.search(r"[^aeiou]y$", noun):
        return noun[:-1] + "ies"
    return noun + "s"


def third_singular(verb):
    special = {"have": "has", "do": "does", "go": "goes", "undergo": "undergoes"}
    if verb in special:
        return special[verb]
    if re.search(r"(s|x|z|ch|sh|o)$", verb):
        return verb + "es"
    if re.search(r"[^aeiou]y$", verb):
        return verb[:-1] + "ies"
    return verb + "s"


def regular_past(verb, doubles):
    if doubles:
        return verb + ("k" if verb.endswith("c") else verb[-1]) + "ed"  # stopped, panicked
    if verb.endswith("e"):
        return verb + "d"
    if re.search(r"[^aeiou]y$", verb):
        return verb[:-1] + "ied"
    return verb + "ed"


# ---- the lexicon ----------------------------------------------------------------

def frequency(wn, lemma, p, forms):
    # SemCor counts are scaled up: one tagged use in running text says more
    # than one mention in a dictionary gloss.
    return 5 * wn.semcor[(lemma, p)] + sum(wn.gloss[f] for f in set(forms))


def plural_of(wn, noun):
    """The plural the glosses use most among the regular one, noun.exc's forms
    (brethren/brothers) and -man -> -men (which WordNet's morphology does by
    rule, not by listing). An exception form that is itself a noun ("dive" for
    "diva") cannot be counted apart from that noun and is not a candidate."""
    if noun in PLURAL_OVERRIDES:
        return PLURAL_OVERRIDES[noun]
    candidates = [regular_plural(noun)]
    candidates += [f for f in wn.exceptions["n"].get(noun, []) if (f, "n") not in wn.index]
    if noun.endswith("man"):
        candidates.append(noun[:-3] + "men")
    return max(candidates, key=lambda f: wn.gloss[f])  # max keeps the first on a tie


def looks_plural(wn, noun):
    """A lemma that is itself a plural ("glasses", "arms")."""
    for stem in (noun[:-1], noun[:-2]):
        if noun.endswith("s") and (stem, "n") in wn.index and regular_plural(stem) == noun:
            return True
    return False


def lower_case_in(synset, lemma):
    """Whether the synset spells the lemma in lower case (WordNet keeps capitals)."""
    return any(re.sub(r"\(.*\)$", "", w) == lemma for w in synset["words"])


def countable(wn, singular, plural):
    # A mass noun ("furniture", "water") is rarely written in the plural; the
    # glosses are the only running text at hand to tell.
    return wn.gloss[plural] >= 3 and wn.gloss[plural] * 33 >= wn.gloss[singular]


def nouns(wn):
    animate, things = [], []
    blocked = block("noun")
    irregular_plurals = {f for forms in wn.exceptions["n"].values() for f in forms}
    for lemma in wn.lemmas("n"):
        senses = wn.senses(lemma, "n")
        if lemma in blocked or not senses or lemma in irregular_plurals or looks_plural(wn, lemma):
            continue
        plural = plural_of(wn, lemma)
        if not countable(wn, lemma, plural):
            continue
        if not lower_case_in(senses[0], lemma):
            continue  # a proper name or nationality (Roman, Begin, Tell)
        if max(wn.semcor[(lemma, "v")], wn.semcor[(lemma, "a")]) > wn.semcor[(lemma, "n")]:
            continue  # mostly a verb or adjective ("open", "produce", "treat")
        lexfile = senses[0]["lexfile"]
        row = (frequency(wn, lemma, "n", [lemma, plural]), lemma, plural)
        if lexfile in ANIMATE_FILES | {3} and wn.descends_from("n", senses[0]["offset"], ANIMATE_ROOTS):
            animate.append(row)
        elif wn.semcor[(lemma, "n")] == 0:
            continue  # a rare technical word ("ascocarp"): inanimate nouns need a SemCor use
        elif lexfile in THING_FILES:
            things.append(row)
    return top(animate, "animate"), top(things, "thing")


def top(rows, kind):
    rows.sort(key=lambda r: (-r[0], r[1]))
    return rows[:COUNTS[kind]]


def verb_forms(wn, verb, irregular):
    """(third, past, participle), or None for an irregular verb we cannot inflect."""
    if verb in irregular:
        past, participle = irregular[verb]
        return third_singular(verb), past, participle
    # verb.exc also lists regular forms the WordNet morphology rules cannot
    # undo: doubled consonants ("stopped", "panicked") and -ied ("worried").
    exc = {f for f in wn.exceptions["v"].get(verb, []) if not f.endswith("ing")}
    doubled = regular_past(verb, doubles=True)
    if exc - {doubled, regular_past(verb, doubles=False)}:
        if wn.semcor[(verb, "v")] >= 3:
            print(f"gen_lexicon: irregular verb not in the table, left out: {verb} {sorted(exc)}",
                  file=sys.stderr)
        return None
    past = regular_past(verb, doubles=doubled in exc)
    return third_singular(verb), past, past


def verb_classes(wn, verb):
    """Classes from the frames of the most frequent senses; the animate-object
    class only from the first sense, since it is the one the grammar leans on
    to make word order the only cue to who did what."""
    if verb in VERB_CLASS_OVERRIDES:
        return set(VERB_CLASS_OVERRIDES[verb].split())
    synsets = wn.senses(verb, "v")
    senses = [s["frames"].get(verb, set()) for s in synsets]
    classes = set()
    if senses and 9 in senses[0]:
        classes.add("kTransitiveAnimate")
    if any(8 in f for f in senses[:2]):
        classes.add("kTransitiveThing")
    if any(f & {2, 22} for f in senses[:2]):
        classes.add("kIntransitive")
    # A "that" clause only after verbs of thinking and saying (verb.cognition,
    # verb.communication): frame 26 alone admits "choose that ...".
    if any(26 in f and s["lexfile"] in (31, 32) for f, s in zip(senses[:2], synsets)):
        classes.add("kClausal")
    return {c for c in classes if verb not in VERB_CLASS_REMOVALS.get(c, "").split()}


def parse_irregular():
    table = {}
    for entry in IRREGULAR_VERBS.replace("\n", " ").split(";"):
        base, past, participle = entry.split()
        table[base] = (past, participle)
    return table


def check_irregular(wn, table):
    """Every irregular form in the table must be one WordNet knows for that verb."""
    for base, forms in table.items():
        for form in forms:
            known = form == base or form in wn.exceptions["v"].get(base, []) \
                or form == regular_past(base, False)
            if not known:
                sys.exit(f"gen_lexicon: IRREGULAR_VERBS: {base} -> {form} is not in verb.exc")


def verbs(wn):
    table = parse_irregular()
    check_irregular(wn, table)
    blocked = block("verb")
    rows = []
    for lemma in wn.lemmas("v"):
        if lemma in blocked:
            continue
        classes = verb_classes(wn, lemma)
        forms = verb_forms(wn, lemma, table) if classes else None
        if not forms:
            continue
        # Gloss counts would credit "tree" and "water" with their noun uses:
        # verbs are ranked by SemCor alone, where their tags are reliable.
        if wn.semcor[(lemma, "v")] >= 3:
            rows.append((wn.semcor[(lemma, "v")], lemma, *forms, classes))
    rows.sort(key=lambda r: (-r[0], r[1]))
    return drop_form_clashes(rows)[:COUNTS["verb"]]


def drop_form_clashes(rows, forms=lambda row: set(row[1:5])):
    """Drops a word whose forms clash with a more frequent word's ("saw" the
    verb against "saw" the past of "see"), so a form names one word."""
    seen, kept = set(), []
    for row in rows:
        these = forms(row)
        if these & seen:
            continue
        seen |= these
        kept.append(row)
    return kept


NUMBER_WORDS = re.compile(r"^(one|two|three|four|five|six|seven|eight|nine|ten|eleven|twelve|"
                          r"\w+teen|twenty|thirty|forty|fifty|sixty|seventy|eighty|ninety|"
                          r"first|second|third|\w+th)$")


def comparative(wn, adjective):
    """better, larger, greatest: forms of another adjective, not lemmas of their own."""
    for suffix, cut in (("er", 2), ("er", 1), ("est", 3), ("est", 2)):
        stem = adjective[:-cut]
        if adjective.endswith(suffix) and ((stem, "a") in wn.index or (stem[:-1], "a") in wn.index):
            return True
    return adjective in wn.adjective_forms


def adjectives(wn):
    blocked = block("adjective")
    rows = []
    for lemma in wn.lemmas("a"):
        senses = wn.senses(lemma, "a")
        if lemma in blocked or not senses or senses[0]["lexfile"] != 0:
            continue
        if NUMBER_WORDS.match(lemma) or comparative(wn, lemma):
            continue
        # "(p)" marks a predicate-only use (afraid, asleep): not before a noun.
        own = [w for s in senses[:1] for w in s["words"] if re.sub(r"\(.*\)$", "", w).lower() == lemma]
        if any(w.endswith("(p)") for w in own):
            continue
        if wn.semcor[(lemma, "a")] >= 1:
            rows.append((wn.semcor[(lemma, "a")], lemma))
    return top(rows, "adjective")


def adverbs(wn):
    """Manner adverbs: -ly words derived from an adjective (a pertainym pointer)."""
    blocked = block("adverb")
    rows = []
    for lemma in wn.lemmas("r"):
        senses = wn.senses(lemma, "r")
        if lemma in blocked or not senses or not lemma.endswith("ly"):
            continue
        if not any(sym == "\\" for sym, _ in senses[0]["pointers"]):
            continue
        if wn.semcor[(lemma, "r")] >= 1:
            rows.append((wn.semcor[(lemma, "r")], lemma))
    return top(rows, "adverb")


# ---- output ----------------------------------------------------------------------

def write(out, animate, things, verb_rows, adj_rows, adv_rows):
    noun_rows = sorted([(f, s, p, "kAnimate") for f, s, p in animate] +
                       [(f, s, p, "kThing") for f, s, p in things], key=lambda r: (-r[0], r[1]))
    noun_rows = drop_form_clashes(noun_rows, forms=lambda r: {r[1], r[2]})  # "ax" after "axe"
    lines = ["// Generated by scripts/gen_lexicon.py from WordNet 3.0 (Debian package wordnet-base).",
             "// Do not edit: change the script and run it again. Rows are most frequent first.",
             f"// {sum(r[3] == 'kAnimate' for r in noun_rows)} animate nouns, "
             f"{sum(r[3] == 'kThing' for r in noun_rows)} thing nouns, {len(verb_rows)} verbs,",
             f"// {len(adj_rows)} adjectives, {len(adv_rows)} adverbs.",
             "",
             "// singular, plural, kind",
             "const NounRow kNounRows[] = {"]
    lines += [f'    {{"{s}", "{p}", {a}}},' for _, s, p, a in noun_rows]
    lines += ["};", "", "// base, third person singular, past, past participle, classes",
              "const VerbRow kVerbRows[] = {"]
    for _, base, third, past, part, classes in verb_rows:
        lines.append(f'    {{"{base}", "{third}", "{past}", "{part}", {" | ".join(sorted(classes))}}},')
    lines += ["};", "", "const char* const kAdjectiveRows[] = {"]
    lines += [f'    "{a}",' for _, a in adj_rows]
    lines += ["};", "", "const char* const kAdverbRows[] = {"]
    lines += [f'    "{a}",' for _, a in adv_rows]
    lines += ["};", ""]
    with open(out, "w") as f:
        f.write("\n".join(lines))


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--wordnet", default="/usr/share/wordnet")
    ap.add_argument("--out", default="synth/lexicon_data.inc")
    args = ap.parse_args()
    wn = WordNet(args.wordnet)
    animate, things = nouns(wn)
    write(args.out, animate, things, verbs(wn), adjectives(wn), adverbs(wn))


if __name__ == "__main__":
    main()
