"""Languages (kalma/kg's label languages, `kalma dataset localize`, kalma/languages): each broken the
way English creeps back in. Other developers of the languages area keep their mutations in blocks
of their own below."""

from __future__ import annotations

from . import Mutation

CONTRACT = "tests/contract/test_kg_languages.py"

# ---------------------------------------------------------------- labels in the language (lang-kg)
KG_LABELS = (
    Mutation(
        "the SPARQL sources read @en whatever the language",
        "kalma/kg/sparql.py",
        "return f\"FILTER(LANG(?{var}) IN ({', '.join(literal(lang, None) for lang in langs)}))\"",
        'return f"FILTER(LANG(?{var}) IN (\\"en\\"))"',
        (CONTRACT,),
    ),
    Mutation(
        "the local Wikidata reads @en whatever the language",
        "kalma/kg/store.py",
        "        self.langs = label_languages(self.lang, self.fallback)",
        '        self.langs = ("en",)',
        (CONTRACT,),
    ),
    Mutation(
        "a missing label filled in English silently (the fallback always on)",
        "kalma/kg/base.py",
        "    return tuple(dict.fromkeys((lang, MUL, *([fallback] if fallback else []))))",
        '    return tuple(dict.fromkeys((lang, MUL, *([fallback] if fallback else ["en"]))))',
        (CONTRACT,),
    ),
    Mutation(
        "a label from the fallback not noted",
        "kalma/kg/base.py",
        "            self.fell_back.add(eid)",
        "            pass",
        (CONTRACT,),
    ),
    Mutation(
        "mul not read for the language",
        "kalma/kg/base.py",
        "    return tuple(dict.fromkeys((lang, MUL, *([fallback] if fallback else []))))",
        "    return tuple(dict.fromkeys((lang, *([fallback] if fallback else []))))",
        (CONTRACT,),
    ),
    Mutation(
        "a store opened in a language it does not hold",
        "kalma/kg/store.py",
        "            if asked not in held:",
        "            if asked not in held and False:",
        (CONTRACT,),
    ),
)

MUTATIONS = KG_LABELS
