"""Wikidata's own labels, in English, French, German and Spanish, for what `perf.dumpgen` writes.

Property labels are those Wikidata gives its properties (`wd:P19 rdfs:label "lieu de naissance"@fr`),
as written from Wikidata's property pages (this machine reaches no Wikidata to check them again);
class items are labelled the same way. The invented vocabulary (`occupation 17`, `Country 3`) is
named by a word of each language and its number; people, places, organizations and works keep
their name in every language, as real names mostly do. A few entities have no label in French or
German (`lacks`), as real data has: Q106975887 of the five real entities has none in German.
"""

from __future__ import annotations

import re
from typing import Any

WRITTEN = ("en", "fr", "de", "es")  # the languages these tables hold

# English label -> its label in French, German and Spanish (properties, then classes and values)
REAL: dict[str, tuple[str, str, str]] = {
    "instance of": ("nature de l'élément", "ist ein(e)", "instancia de"),
    "sex or gender": ("sexe ou genre", "Geschlecht", "sexo o género"),
    "place of birth": ("lieu de naissance", "Geburtsort", "lugar de nacimiento"),
    "place of death": ("lieu de mort", "Sterbeort", "lugar de fallecimiento"),
    "father": ("père", "Vater", "padre"),
    "mother": ("mère", "Mutter", "madre"),
    "spouse": ("conjoint ou conjointe", "Ehepartner", "cónyuge"),
    "child": ("enfant", "Kind", "hijo"),
    "sibling": ("frère ou sœur", "Geschwister", "hermano"),
    "student of": ("élève de", "Schüler von", "alumno de"),
    "student": ("élève", "Schüler", "estudiante"),
    "occupation": ("occupation", "Tätigkeit", "ocupación"),
    "country of citizenship": ("pays de nationalité", "Land der Staatsangehörigkeit", "país de nacionalidad"),
    "date of birth": ("date de naissance", "Geburtsdatum", "fecha de nacimiento"),
    "date of death": ("date de mort", "Sterbedatum", "fecha de fallecimiento"),
    "given name": ("prénom", "Vorname", "nombre de pila"),
    "family name": ("nom de famille", "Familienname", "apellido"),
    "languages spoken, written or signed": (
        "langues parlées, écrites ou signées",
        "gesprochene oder publizierte Sprachen",
        "lenguas habladas, escritas o signadas",
    ),
    "inverse property": ("propriété inverse", "inverse Eigenschaft", "propiedad inversa"),
    "subclass of": ("sous-classe de", "Unterklasse von", "subclase de"),
    "headquarters location": ("siège", "Hauptverwaltung", "sede"),
    "founded by": ("fondateur ou fondatrice", "Gründer", "fundador"),
    "industry": ("secteur d'activité", "Branche", "industria"),
    "inception": ("date de fondation ou de création", "Gründung, Erstellung bzw. Entstehung", "fecha de fundación o creación"),
    "country": ("pays", "Staat", "país"),
    "head of government": ("chef de l'exécutif", "Regierungschef", "jefe de gobierno"),
    "twinned administrative body": ("jumelage ou partenariat", "Partnerschaft", "hermanamiento"),
    "author": ("auteur ou autrice", "Autor", "autor"),
    "genre": ("genre artistique", "Genre", "género"),
    "publication date": ("date de publication", "Veröffentlichungsdatum", "fecha de publicación"),
    "Commons category": ("catégorie Commons", "Commons-Kategorie", "categoría en Commons"),
    "human": ("être humain", "Mensch", "ser humano"),
    "male": ("masculin", "männlich", "masculino"),
    "female": ("féminin", "weiblich", "femenino"),
    "organization": ("organisation", "Organisation", "organización"),
    "business": ("entreprise", "Unternehmen", "empresa"),
    "company": ("compagnie", "Gesellschaft", "compañía"),
    "nonprofit organization": ("organisation à but non lucratif", "Non-Profit-Organisation", "organización sin ánimo de lucro"),
    "city": ("ville", "Stadt", "ciudad"),
    "big city": ("grande ville", "Großstadt", "gran ciudad"),
    "literary work": ("œuvre littéraire", "literarisches Werk", "obra literaria"),
    "novel": ("roman", "Roman", "novela"),
    "English": ("anglais", "Englisch", "inglés"),
    "writer": ("écrivain", "Schriftsteller", "escritor"),
    "United Kingdom": ("Royaume-Uni", "Vereinigtes Königreich", "Reino Unido"),
}
# the invented vocabulary's words (`occupation 17`) and aliases' patterns (`City of Aldenford`)
WORDS: dict[str, tuple[str, str, str]] = {
    "occupation": ("métier", "Beruf", "oficio"),
    "industry": ("secteur", "Wirtschaftszweig", "sector"),
    "genre": ("catégorie", "Gattung", "categoría"),
    "Country": ("Pays", "Land", "País"),
    "Tongue": ("Langue", "Sprache", "Lengua"),
    "authority identifier": ("identifiant d'autorité", "Normdatenkennung", "identificador de autoridad"),
    "City of": ("Ville de", "Stadt", "Ciudad de"),
}
_NUMBERED = re.compile(r"^(.*?) ([0-9]+)$")


def label_in(text: str, lang: str) -> str:
    """`text` (an English label or alias the dump writes) in `lang`; a name stays as it is."""
    if lang == "en" or lang not in WRITTEN:
        return text
    i = WRITTEN.index(lang) - 1
    if text in REAL:
        return REAL[text][i]
    m = _NUMBERED.match(text)
    if m and m.group(1) in WORDS:
        return f"{WORDS[m.group(1)][i]} {m.group(2)}"
    if text.startswith("City of "):
        return f"{WORDS['City of'][i]} {text.removeprefix('City of ')}"
    return text


def lacks(eid: str, lang: str) -> bool:
    """Whether the dump leaves `eid` (an entity the dump invents or takes from the release) without
    a label in `lang`: about one in 31 has none in German, one in 37 none in French."""
    if not eid.startswith("Q") or lang not in ("fr", "de"):
        return False
    n = int(eid[1:])
    return n % 31 == 3 if lang == "de" else n % 37 == 7


def in_languages(entity: dict[str, Any], languages: tuple[str, ...], named: bool) -> dict[str, Any]:
    """`entity` (as `perf.dumpgen` makes it, its English terms under `en`) with its label and
    aliases in each of `languages` (its description in English alone, as many real ones are); a
    `named` entity (a person, city, organization or work) may lack a label (`lacks`), and then
    lacks its aliases there too."""
    en_label = entity["labels"]["en"]["value"]
    en_desc = entity.get("descriptions", {}).get("en", {}).get("value", "")
    en_aliases = [a["value"] for a in entity.get("aliases", {}).get("en", [])]
    out = {**entity, "labels": {}, "descriptions": {}, "aliases": {}}
    for lang in languages:
        if named and lacks(entity["id"], lang):
            continue
        out["labels"][lang] = {"language": lang, "value": label_in(en_label, lang)}
        if en_desc and lang == "en":
            out["descriptions"][lang] = {"language": lang, "value": en_desc}
        if en_aliases and (lang == "en" or named):  # a property's other names are English only, as its table says
            out["aliases"][lang] = [{"language": lang, "value": label_in(a, lang)} for a in en_aliases]
    return out
