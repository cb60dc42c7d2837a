"""A WebShop page as the paper's agent read it: the visible text of the HTML, buttons as ``[text]``.

The rules are those of the ReAct WebShop notebook's ``webshop_text`` (github:ysymyth/ReAct,
WebShop.ipynb), so that observations read as the paper's did:

- the page's text nodes, in document order, except those inside ``style``, ``script``,
  ``head``, ``title``, ``meta`` and comments; a node that is only whitespace (or literal
  ``\\n`` pairs) is skipped;
- a button's text is ``\\n[text] ``; an option label's ``[text]``, or ``[[text]]`` when the page
  URL selects it (``'text'`` occurs in the URL, which carries the options as a dict literal);
  an option's group is the plain text just before its labels;
- a result's ASIN (a link of class ``product-link``) is ``\\n[ASIN] ``, for the first three
  results only (``results_shown``: LATS's copy of the function shows ten); the title and price
  after the fourth and later ASINs are left out too;
- other text is ``\\n{text} ``; on every page but the first, the first two plain texts (the
  ``Instruction:`` label and the instruction) are left out;
- on the done page the observation is ``Your score (min 0.0, max 1.0): {score}`` and the score
  is read from the text after that label;
- finally the text goes through the notebook's ``clean_str`` (unicode-escape round trip), and
  where that round trip cannot decode the text it is kept as it is.

``render(html, url, first_page)`` returns the observation with what an agent can click: the
result ASINs (``asins``), the option values and their groups (``options``), the buttons, and
the score (``reward``) on the done page.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import TYPE_CHECKING

if TYPE_CHECKING:  # bs4 is imported on the first render: not on every command's start-up
    from bs4.element import NavigableString

SCORE_LABEL = "Your score (min 0.0, max 1.0)"
_HIDDEN = frozenset({"style", "script", "head", "title", "meta", "[document]"})


@dataclass
class Page:
    text: str
    asins: list[str] = field(default_factory=list)
    options: dict[str, str] = field(default_factory=dict)  # option value -> its group
    buttons: list[str] = field(default_factory=list)
    reward: float | None = None


def _visible(node: NavigableString, comment: type) -> bool:
    return node.parent is not None and node.parent.name not in _HIDDEN and not isinstance(node, comment)


def clean(text: str) -> str:
    """The notebook's ``clean_str``: escape sequences decoded; text it cannot decode kept as is."""
    try:
        return text.encode().decode("unicode-escape").encode("latin1").decode("utf-8")
    except (UnicodeDecodeError, UnicodeEncodeError):
        return text


def render(html: str, url: str, first_page: bool = False, results_shown: int = 3) -> Page:
    from bs4 import BeautifulSoup
    from bs4.element import Comment

    soup = BeautifulSoup(html, "html.parser")
    texts = [t for t in soup.find_all(string=True) if _visible(t, Comment)]
    page = Page("")
    parts: list[str] = []
    group = ""
    plain = results = since_result = 0
    for node in texts:
        t = str(node)
        if t == "\n" or not t.replace("\n", "").replace("\\n", "").replace(" ", ""):
            continue
        parent = node.parent
        if parent is not None and parent.name == "button":
            parts.append(f"\n[{t}] ")
            page.buttons.append(t)
        elif parent is not None and parent.name == "label":
            parts.append(f"[[{t}]]" if f"'{t}'" in url else f"[{t}]")
            page.options[t] = group
        elif parent is not None and parent.get("class") == ["product-link"]:
            parts.append(f"\n[{t}] " if results < results_shown else "")
            results += 1
            page.asins.append(t)
            since_result = 0
        else:
            hidden = (plain < 2 and not first_page) or (since_result <= 2 and results >= 4)
            parts.append("" if hidden else f"\n{t} ")
            group = t
            plain += 1
        since_result += 1
    page.text = "".join(parts)
    stripped = [str(t) for t in texts]
    if SCORE_LABEL in stripped:
        index = stripped.index(SCORE_LABEL)
        score = stripped[index + 1] if index + 1 < len(stripped) else ""
        page.reward = float(score)
        page.text = f"{SCORE_LABEL}: {score}"
    page.text = clean(page.text)
    return page
