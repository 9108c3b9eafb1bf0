"""The words of the grammar corpus, as tables: verbs with their four forms and the kind of
complement they take, nouns by meaning, adjectives, time adverbials by tense.

Every verb form is written out (regular and irregular alike) so the table is the single
source of truth for which word is a past-simple form. No word is both a past-simple
form and a base / -s / -ing form, so "is this a past-simple verb" has one answer.
"""

from __future__ import annotations

from dataclasses import dataclass

# base  3rd-person-singular  past-simple  -ing  : complement
# complements: DEST (to a place / home), or an object kind (FOOD, DRINK, TEXT, ITEM,
# PLACE, PERSON, ANIMAL, GAME, SHOW), or NONE (intransitive).
VERB_TABLE = """
walk walks walked walking : DEST
run runs ran running : DEST
go goes went going : DEST
drive drives drove driving : DEST
fly flies flew flying : DEST
travel travels travelled travelling : DEST
return returns returned returning : DEST
come comes came coming : DEST
jog jogs jogged jogging : DEST
eat eats ate eating : FOOD
cook cooks cooked cooking : FOOD
bake bakes baked baking : FOOD
share shares shared sharing : FOOD
pick picks picked picking : FOOD
drink drinks drank drinking : DRINK
make makes made making : DRINK
order orders ordered ordering : DRINK
write writes wrote writing : TEXT
send sends sent sending : TEXT
finish finishes finished finishing : TEXT
study studies studied studying : TEXT
buy buys bought buying : ITEM
sell sells sold selling : ITEM
find finds found finding : ITEM
lose loses lost losing : ITEM
carry carries carried carrying : ITEM
fix fixes fixed fixing : ITEM
break breaks broke breaking : ITEM
take takes took taking : ITEM
bring brings brought bringing : ITEM
draw draws drew drawing : ITEM
paint paints painted painting : ITEM
visit visits visited visiting : PLACE
leave leaves left leaving : PLACE
clean cleans cleaned cleaning : PLACE
meet meets met meeting : PERSON
call calls called calling : PERSON
help helps helped helping : PERSON
invite invites invited inviting : PERSON
teach teaches taught teaching : PERSON
see sees saw seeing : PERSON
hug hugs hugged hugging : PERSON
tell tells told telling : PERSON
feed feeds fed feeding : ANIMAL
wash washes washed washing : ANIMAL
catch catches caught catching : ANIMAL
chase chases chased chasing : ANIMAL
play plays played playing : GAME
win wins won winning : SHOW
watch watches watched watching : SHOW
enjoy enjoys enjoyed enjoying : SHOW
sleep sleeps slept sleeping : NONE
sing sings sang singing : NONE
dance dances danced dancing : NONE
laugh laughs laughed laughing : NONE
cry cries cried crying : NONE
smile smiles smiled smiling : NONE
work works worked working : NONE
sit sits sat sitting : NONE
swim swims swam swimming : NONE
"""

# singular plural : kind.  PERSON nouns are also the subjects of sentences.
NOUN_TABLE = """
teacher teachers : PERSON
doctor doctors : PERSON
student students : PERSON
farmer farmers : PERSON
baker bakers : PERSON
driver drivers : PERSON
singer singers : PERSON
child children : PERSON
man men : PERSON
woman women : PERSON
friend friends : PERSON
neighbour neighbours : PERSON
brother brothers : PERSON
sister sisters : PERSON
mother mothers : PERSON
father fathers : PERSON
cousin cousins : PERSON
boy boys : PERSON
girl girls : PERSON
artist artists : PERSON
uncle uncles : PERSON
aunt aunts : PERSON
apple apples : FOOD
banana bananas : FOOD
orange oranges : FOOD
sandwich sandwiches : FOOD
cake cakes : FOOD
pizza pizzas : FOOD
egg eggs : FOOD
cookie cookies : FOOD
potato potatoes : FOOD
tomato tomatoes : FOOD
carrot carrots : FOOD
pear pears : FOOD
peach peaches : FOOD
onion onions : FOOD
book books : TEXT
letter letters : TEXT
story stories : TEXT
poem poems : TEXT
newspaper newspapers : TEXT
magazine magazines : TEXT
email emails : TEXT
report reports : TEXT
note notes : TEXT
essay essays : TEXT
bike bikes : ITEM
car cars : ITEM
hat hats : ITEM
coat coats : ITEM
shirt shirts : ITEM
lamp lamps : ITEM
chair chairs : ITEM
table tables : ITEM
phone phones : ITEM
ticket tickets : ITEM
umbrella umbrellas : ITEM
clock clocks : ITEM
bag bags : ITEM
ball balls : ITEM
camera cameras : ITEM
guitar guitars : ITEM
gift gifts : ITEM
toy toys : ITEM
market markets : PLACE
park parks : PLACE
library libraries : PLACE
museum museums : PLACE
station stations : PLACE
beach beaches : PLACE
hospital hospitals : PLACE
office offices : PLACE
bank banks : PLACE
cinema cinemas : PLACE
zoo zoos : PLACE
city cities : PLACE
village villages : PLACE
airport airports : PLACE
garden gardens : PLACE
shop shops : PLACE
church churches : PLACE
restaurant restaurants : PLACE
castle castles : PLACE
farm farms : PLACE
kitchen kitchens : PLACE
house houses : PLACE
dog dogs : ANIMAL
cat cats : ANIMAL
horse horses : ANIMAL
cow cows : ANIMAL
goat goats : ANIMAL
duck ducks : ANIMAL
rabbit rabbits : ANIMAL
pig pigs : ANIMAL
puppy puppies : ANIMAL
elephant elephants : ANIMAL
movie movies : SHOW
film films : SHOW
match matches : SHOW
race races : SHOW
concert concerts : SHOW
show shows : SHOW
video videos : SHOW
game games : SHOW
"""

# Mass nouns (no plural, no "a"): drinks, and games that are played without an article.
DRINKS = "water milk tea coffee juice lemonade cocoa".split()
DRINK_CONTAINERS = "glass cup bottle jug".split()
GAMES = "football chess tennis cards basketball hockey volleyball golf".split()
INSTRUMENTS = "piano violin drums flute trumpet cello".split()

NAMES = "Anna Tom Maria Ben Emma Sam Lucy Omar".split()

# Adjectives by what they describe.
ADJECTIVES = {
    "PERSON": "old young tall kind happy tired busy clever angry quiet friendly brave".split(),
    "FOOD": "fresh sweet ripe green big small warm delicious".split(),
    "TEXT": "long short new old interesting boring funny strange".split(),
    "ITEM": "new old red blue heavy cheap expensive broken black white yellow".split(),
    "PLACE": "big small old new busy empty quiet famous beautiful".split(),
    "ANIMAL": "little hungry lazy brown grey noisy cute wild".split(),
    "SHOW": "long short exciting boring great funny".split(),
    "DRINK": "hot cold fresh sweet".split(),
}

# Sentence-initial time adverbials, each governing one tense.
ADVERBIALS = {
    "PAST": [
        "Yesterday",
        "Last night",
        "Last week",
        "Last month",
        "Last year",
        "Last summer",
        "Last winter",
        "Last weekend",
        "Two days ago",
        "Three days ago",
        "A week ago",
        "A long time ago",
    ],
    "FUTURE": [
        "Tomorrow",
        "Next week",
        "Next month",
        "Next year",
        "Next summer",
        "Next winter",
        "Next weekend",
        "Soon",
        "Later",
    ],
    "HABITUAL": [
        "Every day",
        "Every morning",
        "Every evening",
        "Every week",
        "Every weekend",
        "Usually",
        "Often",
        "Sometimes",
        "On Sundays",
    ],
    "PROGRESSIVE": ["Right now", "At the moment", "Now"],
}

# Optional endings of a verb phrase.
MANNER_ADVERBS = "quickly slowly carefully quietly happily together again alone early late".split()
LOCATION_PREPOSITIONS = "in at near behind".split()

# Determiners by the number of the noun they introduce ("a"/"an" are chosen by sound).
DETERMINERS_SINGULAR = "the my your his her our their this that".split()
DETERMINERS_PLURAL = "the my your his her our their these those some two three many".split()

VOWELS = set("aeiou")


def a_or_an(word: str) -> str:
    """The indefinite article before `word` (a spelling rule: the lexicon has no "hour"
    or "university" that would break it)."""
    return "an" if word[0].lower() in VOWELS else "a"


@dataclass(frozen=True)
class Verb:
    base: str
    third_singular: str
    past: str
    ing: str
    complement: str


@dataclass(frozen=True)
class Noun:
    singular: str
    plural: str
    kind: str


def _rows(table: str) -> list[tuple[list[str], str]]:
    """Rows `w1 w2 ... : KIND` -> [([w1, w2, ...], KIND), ...]."""
    rows = []
    for line in table.strip().splitlines():
        words, kind = line.split(":")
        rows.append((words.split(), kind.strip()))
    return rows


VERBS = [Verb(*forms, complement) for forms, complement in _rows(VERB_TABLE)]
NOUNS = [Noun(*forms, kind) for forms, kind in _rows(NOUN_TABLE)]
PAST_SIMPLE = frozenset(v.past for v in VERBS)
