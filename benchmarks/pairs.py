"""Evaluation pairs labelled by how they were made: "the same article" or "a different article".

A pair's label is what a reader would say of it, decided by the way the second document was made from the
first; no similarity measure enters.  The originals are whole pages of Debian documentation packages
(corpus.py): Chinese (zh), English (en) and traditional Chinese (tw).  The kinds:

- same article: P1 in another site's header, nav and footer (7-28% of the copy); P1x in two different site
  templates; P2 light edits (typos, changed numbers or dates, one sentence added or removed; <= 5% of the
  characters); P3a format noise (full/half-width punctuation, indents, blank lines, CRLF, `&amp;` `&lt;`
  `&gt;`, tags left in); P3b `&nbsp;` indents and blank lines; P3c invisible characters (zero-width space,
  BOM, soft hyphen); P4 traditional against simplified characters (made by OpenCC's own converter);
  P5 a truncated republication (the first 50-80%); P6 paragraphs reordered; P7 a mirror with its links
  stripped;
- different article: N1 two different articles in one template; N2 an older revision, 30-50% rewritten;
  N3 the most alike neighbouring page of the same manual; N4 another article quoting 10-25% of this one;
  N5 formulaic neighbours: two pages of one manual, each under its own title, that share most of their text
  (the boilerplate of a family of pages: coreutils' manual pages, the option pages of one dialog).

Templates are drawn afresh for every pair from pools of site names, menus, breadcrumbs, bylines, related
articles (titles and snippets of other pages), tags, copyright and licence lines, so that no fixed template
can be learned.  Every pair falls in the half (tune or report) of its original, by a hash of its id.
"""

from __future__ import annotations

import hashlib
import random
import re
from collections.abc import Callable, Sequence
from dataclasses import dataclass

from corpus import Doc

__all__ = ["CLASSES", "SAME", "Pair", "half_of_id", "make_pairs", "title"]

SAME = ("P1", "P1x", "P2", "P3a", "P3b", "P3c", "P4", "P5", "P6", "P7")
DIFFERENT = ("N1", "N2", "N3", "N4", "N5")
CLASSES = SAME + DIFFERENT
MIN_CHARS, MAX_CHARS = 300, 40_000


@dataclass(frozen=True)
class Pair:
    kind: str  # one of CLASSES
    lang: str
    a: Doc
    b: Doc

    @property
    def same(self) -> bool:
        return self.kind in SAME


def half_of_id(root: str, salt: str = "pairs-1") -> str:
    return "tune" if hashlib.sha256((salt + root).encode()).digest()[0] < 128 else "report"


# -- templates ------------------------------------------------------------------------------------------
_ZH = {
    "site_a": ["技术", "开源", "极客", "码农", "云端", "运维", "程序员", "软件", "系统", "学习", "知识", "数码"],
    "site_b": ["之家", "社区", "论坛", "中文网", "博客", "学院", "资讯网", "频道", "文库", "在线", "天地", "园地"],
    "nav": [
        "首页",
        "新闻",
        "资讯",
        "下载",
        "论坛",
        "文档",
        "教程",
        "问答",
        "博客",
        "专题",
        "视频",
        "招聘",
        "关于我们",
        "联系我们",
        "登录",
        "注册",
        "帮助中心",
        "投稿",
        "排行榜",
        "标签",
        "活动",
        "会员",
        "商城",
        "开发者",
    ],
    "section": ["技术文档", "系统管理", "Linux 教程", "运维", "软件", "开发", "入门", "手册", "网络", "安全"],
    "names": ["王小明", "李华", "张伟", "刘洋", "陈静", "小编", "admin", "佚名", "赵磊", "周婷"],
    "crumb": "当前位置：{}",
    "byline": [
        "发布时间：{date}  来源：{site}  作者：{name}  阅读：{n}",
        "{date} | {site} | 浏览 {n} 次",
        "作者：{name} 时间：{date} 点击：{n}",
        "来源：{site}  编辑：{name}  {date}",
    ],
    "prev": ["上一篇：{}", "下一篇：{}", "上一篇 {}", "下一篇 {}"],
    "related": ["相关文章", "相关阅读", "猜你喜欢", "推荐阅读", "热门文章", "延伸阅读"],
    "tags": "热门标签：{}",
    "lines": [
        "版权所有 © {y}-2024 {site} 保留所有权利",
        "京ICP备{icp}号-1",
        "本站文章均来自网络，如有侵权请联系删除。",
        "分享到：微信 微博 QQ空间 豆瓣",
        "评论（{n}）",
        "扫一扫关注我们的微信公众号",
        "发表评论请先登录。",
        "免责声明：本文仅代表作者个人观点，与本站无关。",
        "转载请注明出处：{site}",
        "客服热线：400-{n}-{n}",
        "友情链接：{a} {b} {c}",
        "返回顶部",
        "点击加载更多",
        "网站地图 | 隐私政策 | 使用条款",
    ],
    "sep": [" | ", " · ", "  ", " / ", "　"],
}
_EN = {
    "site_a": ["Tech", "Open", "Geek", "Code", "Cloud", "Ops", "Dev", "Linux", "System", "Learn", "Byte", "Stack"],
    "site_b": [" Hub", " Weekly", " Forum", " Today", " Blog", " Academy", " News", " Central", " Docs", " Zone"],
    "nav": [
        "Home",
        "News",
        "Downloads",
        "Forum",
        "Docs",
        "Tutorials",
        "Q&A",
        "Blog",
        "Topics",
        "Videos",
        "Jobs",
        "About us",
        "Contact",
        "Sign in",
        "Register",
        "Help",
        "Submit",
        "Popular",
        "Tags",
        "Events",
        "Shop",
    ],
    "section": ["Documentation", "Administration", "Linux tutorials", "Operations", "Software", "Development"],
    "names": ["J. Smith", "Alice Chen", "Bob Miller", "staff", "admin", "Editor", "M. Garcia", "T. Nguyen"],
    "crumb": "You are here: {}",
    "byline": [
        "Published {date} by {name} on {site} - {n} views",
        "{date} | {site} | {n} reads",
        "Posted by {name}, {date}",
        "Source: {site}. Edited by {name}, {date}",
    ],
    "prev": ["Previous: {}", "Next: {}", "<< {}", "{} >>"],
    "related": ["Related posts", "You may also like", "Recommended", "Popular articles", "Further reading"],
    "tags": "Tags: {}",
    "lines": [
        "Copyright © {y}-2024 {site}. All rights reserved.",
        "Reposted from the web; rights belong to the author.",
        "Share: Twitter Facebook LinkedIn Email",
        "Comments ({n})",
        "Sign in to leave a comment.",
        "Disclaimer: views are the author's own.",
        "Please credit {site} when you share this.",
        "Partner sites: {a} {b} {c}",
        "Back to top",
        "Load more",
        "Sitemap | Privacy | Terms of use",
        "Subscribe to our newsletter",
        "Follow us for more tutorials",
    ],
    "sep": [" | ", " · ", "  ", " / ", " - "],
}


def _title(doc: Doc, rng: random.Random, limit: int) -> str:
    lines = [line.strip() for line in doc.text.split("\n") if len(line.strip()) >= 4]
    line = lines[rng.randrange(min(3, len(lines)))] if lines else doc.text[:limit]
    return line[:limit]


class TemplateMaker:
    """Site templates for one language: ``make(rng, target_chars)`` gives (header, footer) of about
    ``target_chars`` characters together, drawn from the pools and from other pages' titles and snippets."""

    def __init__(self, lang: str, others: list[Doc], convert: Callable[[str], str] | None = None) -> None:
        self.pool = _EN if lang == "en" else _ZH
        self.others = others
        self.convert = convert or (lambda s: s)
        self.lang = lang

    def make(self, rng: random.Random, target: int) -> tuple[str, str]:
        p = self.pool
        site = rng.choice(p["site_a"]) + rng.choice(p["site_b"])
        sep = rng.choice(p["sep"])
        date = f"{rng.randrange(2008, 2025)}-{rng.randrange(1, 13):02d}-{rng.randrange(1, 29):02d}"
        fill = {
            "site": site,
            "date": date,
            "name": rng.choice(p["names"]),
            "n": rng.randrange(10, 99999),
            "y": rng.randrange(2000, 2015),
            "icp": rng.randrange(10**7, 10**8),
            "a": rng.choice(p["site_a"]) + rng.choice(p["site_b"]),
            "b": rng.choice(p["site_a"]) + rng.choice(p["site_b"]),
            "c": rng.choice(p["site_a"]) + rng.choice(p["site_b"]),
        }
        header = [site + sep + sep.join(rng.sample(p["nav"], rng.randrange(4, 10)))]
        if rng.random() < 0.7:
            header.append(p["crumb"].format(" > ".join([p["nav"][0], rng.choice(p["section"])])))
        if rng.random() < 0.7:
            header.append(rng.choice(p["byline"]).format(**fill))
        footer: list[str] = []
        size = sum(map(len, header))
        # Footer pieces until the template reaches its share: prev/next titles, related lists with snippets of
        # other pages, tags, and the site's standing lines.
        pieces = ["prev", "related", "tags", "lines", "lines", "lines"]
        rng.shuffle(pieces)
        while size < target:
            kind = pieces[len(footer) % len(pieces)]
            if kind == "prev":
                line = rng.choice(p["prev"]).format(_title(rng.choice(self.others), rng, 30))
            elif kind == "related":
                items = [rng.choice(p["related"])]
                for other in rng.sample(self.others, min(len(self.others), rng.randrange(2, 7))):
                    snippet = _title(other, rng, rng.choice((20, 40, 80)))
                    items.append(("· " if rng.random() < 0.5 else "") + snippet)
                line = "\n".join(items)
            elif kind == "tags":
                words = re.findall(r"[A-Za-z]{4,}|[\u4e00-\u9fff]{2,4}", rng.choice(self.others).text)[:40]
                line = p["tags"].format(" ".join(rng.sample(words, min(len(words), 6)))) if words else site
            else:
                line = rng.choice(p["lines"]).format(**fill)
            footer.append(line)
            size += len(line)
            if len(footer) > 400:
                break
        # Some of the footer goes to the header (a sidebar above the article), so the article is not always
        # at the very top.
        cut = rng.randrange(0, max(1, len(footer) // 3) + 1)
        header += footer[:cut]
        footer = footer[cut:]
        return self.convert("\n".join(header)) + "\n", "\n" + self.convert("\n".join(footer))


def wrap(doc_text: str, template: tuple[str, str]) -> str:
    return template[0] + doc_text + template[1]


def _template_chars(article: int, rng: random.Random) -> int:
    share = rng.uniform(0.07, 0.28)  # of the copy
    return int(article * share / (1 - share))


# -- edits -----------------------------------------------------------------------------------------------
_SENTENCE = re.compile(r"(?<=[。！？.!?\n])")


def _sentences(text: str) -> list[str]:
    return [s for s in _SENTENCE.split(text) if s]


def light_edits(doc: Doc, donor: Doc, rng: random.Random) -> str:
    """Typos, changed numbers or dates, one sentence added or removed: at most 5% of the characters."""
    budget = max(1, int(len(doc.text) * 0.05))
    text = doc.text
    kinds = rng.sample(["typos", "numbers", "sentence"], rng.choice([1, 2, 3]))
    for kind in kinds:
        share = budget // len(kinds)
        if kind == "typos":
            chars = list(text)
            letters = [i for i, c in enumerate(chars) if c.isalpha()]
            pool = [chars[i] for i in letters] or ["x"]
            for i in rng.sample(letters, min(len(letters), rng.randrange(1, max(2, min(share, len(text) // 100) + 1)))):
                chars[i] = rng.choice(pool)
            text = "".join(chars)
        elif kind == "numbers":
            if re.search(r"\d", text):
                text = _renumber(text, share, rng)
            else:
                text += f"\n{rng.randrange(2000, 2025)}-{rng.randrange(1, 13):02d}-{rng.randrange(1, 29):02d}"
        else:
            parts = _sentences(text)
            if rng.random() < 0.5 and len(parts) > 3:
                fits = [i for i, s in enumerate(parts) if len(s) <= share]
                if fits:
                    del parts[rng.choice(fits)]
            else:
                extra = [s for s in _sentences(donor.text) if 5 <= len(s) <= share]
                if extra:
                    parts.insert(rng.randrange(len(parts) + 1), rng.choice(extra))
            text = "".join(parts)
    return text


def _renumber(text: str, budget: int, rng: random.Random) -> str:
    """About half the numbers of ``text`` changed, at most ``budget`` characters of them."""
    used = 0

    def renumber(m: re.Match[str]) -> str:
        nonlocal used
        if used + len(m.group()) > budget or rng.random() < 0.5:
            return m.group()
        used += len(m.group())
        return str(rng.randrange(10 ** len(m.group())))[: len(m.group())].zfill(len(m.group()))

    return re.sub(r"\d+", renumber, text)


_FULL = str.maketrans("，。：；！？（）", ",.:;!?()")
_HALF = str.maketrans(",.:;!?()", "，。：；！？（）")


def format_noise(doc: Doc, rng: random.Random) -> str:
    """Punctuation width, indents, blank lines, CRLF, escaped & < > and tags left in."""
    text = doc.text
    kinds = rng.sample(["width", "indent", "blank", "crlf", "entities", "tags"], rng.randrange(2, 5))
    lines = text.split("\n")
    if "width" in kinds:
        table = _FULL if rng.random() < 0.5 or doc.lang == "en" else _HALF
        lines = [line.translate(table) for line in lines]
    if "entities" in kinds:
        lines = [line.replace("&", "&amp;").replace("<", "&lt;").replace(">", "&gt;") for line in lines]
    if "tags" in kinds:
        opener = rng.choice(["<p>", '<p class="content">', "<div>", '<span style="font-size:14px">'])
        closer = {"<p": "</p>", "<d": "</div>", "<s": "</span>"}[opener[:2]]
        lines = [f"{opener}{line}{closer}" if rng.random() < 0.7 else line + "<br/>" for line in lines]
    if "indent" in kinds:
        pad = rng.choice(["    ", "\t", "　　", "  "])
        lines = [pad + line for line in lines]
    sep = "\n\n" if "blank" in kinds else "\n"
    if "crlf" in kinds:
        sep = sep.replace("\n", "\r\n")
    return sep.join(lines)


def nbsp_noise(doc: Doc, rng: random.Random) -> str:
    pad = rng.choice(["&nbsp;" * 4, "&nbsp;&nbsp;", "&#160;&#160;", "&ensp;&ensp;", "&#12288;&#12288;"])
    blank = rng.choice(["&nbsp;", "<p>&nbsp;</p>", "&nbsp;<br>", ""])
    lines = [pad + line for line in doc.text.split("\n")]
    return ("\n" + blank + "\n").join(lines) if blank else "\n".join(lines)


_INVISIBLE = ["\u200b", "\u200c", "\u200d", "\ufeff", "\u00ad", "\u2060"]


def invisible_noise(doc: Doc, rng: random.Random) -> str:
    chars = list(doc.text)
    marks = rng.sample(_INVISIBLE, rng.randrange(1, 4))
    for i in sorted(rng.sample(range(len(chars)), min(len(chars), max(3, len(chars) // 50))), reverse=True):
        chars.insert(i, rng.choice(marks))
    return ("\ufeff" if rng.random() < 0.5 else "") + "".join(chars)


def truncated(doc: Doc, rng: random.Random) -> str:
    lines = doc.text.split("\n")
    keep = max(1, int(len(lines) * rng.uniform(0.5, 0.8)))
    tail = {"en": ["(continued)", "Read more...", "..."], "zh": ["……", "阅读全文", "（未完待续）"]}
    return "\n".join(lines[:keep]) + "\n" + rng.choice(tail["en" if doc.lang == "en" else "zh"])


def reordered(doc: Doc, rng: random.Random) -> str:
    lines = doc.text.split("\n")
    if len(lines) < 4:
        return ""
    for _ in range(rng.randrange(1, 3)):
        start = rng.randrange(len(lines))
        size = rng.randrange(1, max(2, len(lines) // 4))
        block = lines[start : start + size]
        del lines[start : start + size]
        where = rng.randrange(len(lines) + 1)
        lines[where:where] = block
    return "\n".join(lines)


_LINKS = re.compile(r"(?:https?|ftp)://\S+|www\.\S+|\b[\w.+-]+@[\w-]+\.[\w.]+\b")


def links_stripped(doc: Doc, rng: random.Random) -> str:
    if not _LINKS.search(doc.text):
        return ""
    return _LINKS.sub("", doc.text)


def revision(doc: Doc, donors: list[Doc], rng: random.Random) -> str:
    """30-50% of the page's characters rewritten: paragraphs replaced by paragraphs of other pages of the same
    manual (what a rewrite of them reads like: same subject, other words)."""
    lines = doc.text.split("\n")
    goal = len(doc.text) * rng.uniform(0.3, 0.5)
    order = list(range(len(lines)))
    rng.shuffle(order)
    supply = [line for d in donors for line in d.text.split("\n") if len(line) >= 20]
    changed = 0
    for i in order:
        if changed >= goal or not supply:
            break
        changed += len(lines[i])
        lines[i] = rng.choice(supply)
    return "\n".join(lines) if changed >= goal * 0.8 else ""


def quoting(doc: Doc, other: Doc, rng: random.Random) -> str:
    """``other`` with 10-25% of ``doc`` quoted inside it (as a share of the result)."""
    share = rng.uniform(0.10, 0.25)
    want = int(len(other.text) * share / (1 - share))
    start = rng.randrange(max(1, len(doc.text) - want))
    excerpt = doc.text[start : start + want]
    lines = other.text.split("\n")
    at = rng.randrange(len(lines) + 1)
    return "\n".join([*lines[:at], excerpt, *lines[at:]])


_HEADINGS = frozenset({"name", "名称", "名字", "名 称", "名稱"})  # a manual page's first section


def title(text: str) -> str:
    """What a page is called: its first line (a manual page's NAME line), up to a " - " that starts its
    description."""
    lines = [line.strip() for line in text.split("\n") if line.strip()]
    if not lines:
        return ""
    first = lines[1] if lines[0].lower() in _HEADINGS and len(lines) > 1 else lines[0]
    return re.split(r"\s+-\s+", first, maxsplit=1)[0]


# -- pairs ------------------------------------------------------------------------------------------------
def make_pairs(
    originals: list[Doc],
    lang: str,
    per_class: int,
    neighbours: dict[str, tuple[str, float]],
    converters: dict[str, Callable[[str], str]],
    formulaic: Sequence[tuple[Doc, Doc]] = (),
    seed: int = 20261126,
) -> list[Pair]:
    """``per_class`` pairs of every class for one language's originals (fewer where the originals do not
    allow more).  ``neighbours``: each original's most alike other page of its manual, with their Jaccard
    (computed by the caller); ``converters``: OpenCC conversions by config name ("s2t", "t2s", ...);
    ``formulaic``: N5's candidates, the most alike first (pages of one manual under different titles)."""
    rng = random.Random(f"{seed}-{lang}")
    docs = [d for d in originals if d.lang == lang and MIN_CHARS <= len(d.text) <= MAX_CHARS]
    by_id = {d.id: d for d in docs}
    by_source: dict[str, list[Doc]] = {}
    for d in docs:
        by_source.setdefault(d.source, []).append(d)
    to_trad = None if lang != "tw" else converters["s2tw"]
    templates = TemplateMaker(lang, docs, to_trad)
    pairs: list[Pair] = []

    def copy(doc: Doc, kind: str, text: str) -> Doc:
        return Doc(f"{doc.id}~{kind}", doc.source, doc.lang, text, doc.id, [kind])

    def add(kind: str, make: Callable[[Doc], tuple[Doc, Doc] | None]) -> None:
        made = 0
        for doc in rng.sample(docs, len(docs)):
            if made >= per_class:
                break
            pair = make(doc)
            if pair is not None and pair[1].text and pair[1].text != pair[0].text:
                pairs.append(Pair(kind, lang, *pair))
                made += 1

    def other_than(doc: Doc) -> Doc:
        while True:
            other = rng.choice(docs)
            if other.id != doc.id:
                return other

    add("P1", lambda d: (d, copy(d, "P1", wrap(d.text, templates.make(rng, _template_chars(len(d.text), rng))))))
    add(
        "P1x",
        lambda d: (
            copy(d, "P1x-a", wrap(d.text, templates.make(rng, _template_chars(len(d.text), rng)))),
            copy(d, "P1x-b", wrap(d.text, templates.make(rng, _template_chars(len(d.text), rng)))),
        ),
    )
    add("P2", lambda d: (d, copy(d, "P2", light_edits(d, other_than(d), rng))))
    add("P3a", lambda d: (d, copy(d, "P3a", format_noise(d, rng))))
    add("P3b", lambda d: (d, copy(d, "P3b", nbsp_noise(d, rng))))
    add("P3c", lambda d: (d, copy(d, "P3c", invisible_noise(d, rng))))
    if lang == "zh":
        add("P4", lambda d: (d, copy(d, "P4", converters[rng.choice(["s2t", "s2tw", "s2hk", "s2twp"])](d.text))))
    elif lang == "tw":
        add("P4", lambda d: (d, copy(d, "P4", converters[rng.choice(["t2s", "tw2s", "tw2sp"])](d.text))))
    add("P5", lambda d: (d, copy(d, "P5", truncated(d, rng))))
    add("P6", lambda d: (d, copy(d, "P6", reordered(d, rng))))
    add("P7", lambda d: (d, copy(d, "P7", links_stripped(d, rng))))

    def one_template(d: Doc) -> tuple[Doc, Doc] | None:
        similar = [o for o in docs if o.id != d.id and 0.5 <= len(o.text) / len(d.text) <= 2]
        if not similar:
            return None
        other = rng.choice(similar)
        template = templates.make(rng, _template_chars((len(d.text) + len(other.text)) // 2, rng))
        return copy(d, "N1", wrap(d.text, template)), copy(other, "N1", wrap(other.text, template))

    add("N1", one_template)

    def rewritten(d: Doc) -> tuple[Doc, Doc] | None:
        donors = [o for o in by_source[d.source] if o.id != d.id] or [other_than(d)]
        text = revision(d, donors, rng)
        return (d, copy(d, "N2", text)) if text else None

    add("N2", rewritten)
    # N3: the most alike neighbours first (the hardest), each page once.
    seen: set[str] = set()
    made = 0
    for doc_id, (other_id, _) in sorted(neighbours.items(), key=lambda kv: -kv[1][1]):
        if made >= per_class:
            break
        if doc_id in by_id and other_id in by_id and not {doc_id, other_id} & seen:
            seen |= {doc_id, other_id}
            pairs.append(Pair("N3", lang, by_id[doc_id], by_id[other_id]))
            made += 1

    def quoted(d: Doc) -> tuple[Doc, Doc]:
        other = other_than(d)
        return d, copy(other, "N4", quoting(d, other, rng))

    add("N4", quoted)
    # N5: the most alike first, each page once.
    seen.clear()
    made = 0
    for a, b in formulaic:
        if made >= per_class:
            break
        if not {a.id, b.id} & seen and title(a.text) != title(b.text):
            seen |= {a.id, b.id}
            pairs.append(Pair("N5", lang, a, b))
            made += 1
    return pairs
