"""A real evaluation corpus from Debian documentation packages, plus edited copies that make real
near-duplicates.  Used by eval_accuracy.py and bench_fingerprint.py.

Packages (Chinese and English): manual pages in Chinese, the GIMP manual (zh_CN and en), the Debian
Reference (zh-cn and en), the New Maintainers' Guide (zh-cn and en), the FAQ (zh-cn and en) and the Debian
Edu manual in Chinese.  They are fetched with `apt-get download` (Debian's archive is reachable from our
machines) into var/corpus.  HELD_OUT names manuals kept apart from all of that: nothing was ever tuned on
them (eval_accuracy.py --sources held-out).

``load_corpus(whole=True)`` (what eval_accuracy.py reports on) keeps every page whole, however long, as a
user would send it; the older chunked form (pieces of about 4,000 characters, none under 300) remains for
bench_fingerprint.py, whose speed figures were made on it.  Edited copies come in two kinds: small edits
(an inserted ad, a deleted sentence, changed numbers or characters, a footer) and the realistic ones the
evaluation must not be blind to: the same article inside a site's header/footer template, two different
articles inside one template, and an older revision with one paragraph rewritten.
"""

from __future__ import annotations

import gzip
import html.parser
import json
import random
import re
import subprocess
from collections.abc import Mapping
from dataclasses import asdict, dataclass, field
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
CACHE = ROOT / "var" / "corpus"
PACKAGES = {
    "manpages-zh": "zh",
    "gimp-help-zh-cn": "zh",
    "debian-reference-zh-cn": "zh",
    "maint-guide-zh-cn": "zh",
    "debian-faq-zh-cn": "zh",
    "debian-edu-doc-zh-cn": "zh",
    "gimp-help-en": "en",
    "debian-reference-en": "en",
    "maint-guide": "en",
    "debian-faq": "en",
    "debian-reference-zh-tw": "tw",
    "maint-guide-zh-tw": "tw",
}
# Packages no part of v4 was tuned on (`eval_accuracy.py --sources held-out`): manuals with one directory per
# language, mapped to ours.  coreutils' own (English) manual pages are a family of formulaic pages (N5).
HELD_OUT = {
    "debian-handbook": {"zh-CN": "zh", "zh-TW": "tw", "en-US": "en"},
    "installation-guide-amd64": {"zh_CN": "zh", "en": "en"},
    "coreutils": {"man": "en"},
}
MIN_CHARS, CHUNK_CHARS = 300, 4000


@dataclass
class Doc:
    id: str
    source: str
    lang: str
    text: str
    edited_from: str | None = None
    edits: list[str] = field(default_factory=list)


# -- fetching and extracting ---------------------------------------------------------------------------
def fetch_packages(cache: Path = CACHE, packages: Mapping[str, str | Mapping[str, str]] = PACKAGES) -> Path:
    debs, tree = cache / "debs", cache / "tree"
    debs.mkdir(parents=True, exist_ok=True)
    missing = [p for p in packages if not list(debs.glob(f"{p}_*.deb"))]
    if missing:
        cmd = ["apt-get", "download", *missing]
        if subprocess.run(cmd, cwd=debs, capture_output=True).returncode != 0:
            subprocess.run(["apt-get", "update", "-qq"], check=True)
            subprocess.run(cmd, cwd=debs, check=True, capture_output=True)
    for deb in debs.glob("*.deb"):
        target = tree / deb.name.split("_", 1)[0]
        if not target.is_dir():
            target.mkdir(parents=True)
            subprocess.run(["dpkg-deb", "-x", str(deb), str(target)], check=True)
    return tree


class _HtmlText(html.parser.HTMLParser):
    SKIP = frozenset({"script", "style", "head", "title"})
    BLOCK = frozenset({"p", "div", "li", "tr", "br", "h1", "h2", "h3", "h4", "pre", "dt", "dd", "table", "section"})

    def __init__(self) -> None:
        super().__init__()
        self.parts: list[str] = []
        self.skipping = 0

    def handle_starttag(self, tag: str, attrs: object) -> None:
        if tag in self.SKIP:
            self.skipping += 1
        elif tag in self.BLOCK:
            self.parts.append("\n")

    def handle_endtag(self, tag: str) -> None:
        if tag in self.SKIP and self.skipping:
            self.skipping -= 1

    def handle_data(self, data: str) -> None:
        if not self.skipping:
            self.parts.append(data)


def html_text(raw: str) -> str:
    parser = _HtmlText()
    parser.feed(raw)
    return _tidy("".join(parser.parts))


_ROFF_ESCAPES = re.compile(r"\\f[BIRP1-4]|\\f\(..|\\s[+-]?\d|\\[&|^%]|\\\(..|\\\*.")


def roff_text(raw: str) -> str:
    lines = []
    for line in raw.splitlines():
        if line.startswith(('.\\"', "'\\\"")):
            continue
        if line.startswith("."):
            macro, _, rest = line.partition(" ")
            if macro in (".SH", ".SS", ".B", ".I", ".BR", ".IR", ".RB", ".BI", ".IB", ".TP", ".IP"):
                line = rest.replace('"', "")
            else:
                continue
        lines.append(_ROFF_ESCAPES.sub("", line).replace("\\-", "-").replace("\\e", "\\"))
    return _tidy("\n".join(lines))


def _tidy(text: str) -> str:
    text = re.sub(r"[ \t\r\f\v]+", " ", text)
    return re.sub(r"\n\s*\n+", "\n", text).strip()


def _chunks(text: str) -> list[str]:
    """Split long documents at line ends into pieces of about CHUNK_CHARS."""
    if len(text) <= CHUNK_CHARS * 1.5:
        return [text]
    out, current = [], []
    size = 0
    for line in text.split("\n"):
        current.append(line)
        size += len(line) + 1
        if size >= CHUNK_CHARS:
            out.append("\n".join(current))
            current, size = [], 0
    if current:
        out.append("\n".join(current))
    return out


def original_docs(
    tree: Path, whole: bool = False, packages: Mapping[str, str | Mapping[str, str]] = PACKAGES
) -> list[Doc]:
    """Every page of every package; ``whole`` keeps each page as one document (no chunks, no length floor
    beyond a non-empty text).  A package's language is given, or found by directory name (other languages'
    directories are left out)."""
    docs: list[Doc] = []
    for package, langs in packages.items():
        base = tree / package
        files = sorted(p for p in base.rglob("*") if p.is_file() and (p.suffix == ".html" or "/man/" in str(p)))
        for path in files:
            if isinstance(langs, str):
                lang = langs
            else:
                found = [langs[part] for part in path.relative_to(base).parts if part in langs]
                if not found:
                    continue
                lang = found[0]
            if path.suffix == ".html":
                text = html_text(path.read_text(encoding="utf-8", errors="replace"))
            elif path.suffix == ".gz":
                text = roff_text(gzip.decompress(path.read_bytes()).decode("utf-8", errors="replace"))
            else:
                continue
            lang_here = "tw" if "/zh_TW/" in str(path) else lang
            if lang_here != "en" and len(re.findall(r"[\u4e00-\u9fff]", text)) < len(text) * 0.2:
                continue  # an untranslated page in a Chinese package
            rel = path.relative_to(base)
            if whole:
                if text.strip():
                    docs.append(Doc(f"{package}:{rel}", package, lang_here, text))
                continue
            for i, chunk in enumerate(_chunks(text)):
                if len(chunk) >= MIN_CHARS:
                    docs.append(Doc(f"{package}:{rel}#{i}", package, lang_here, chunk))
    return docs


# -- edits that make real near-duplicates ----------------------------------------------------------------
ADS = {
    "zh": [
        "关注我们的微信公众号，每天获取最新技术资讯和独家优惠。",
        "限时特惠：点击链接注册即送三十天会员，名额有限。",
        "本站推荐：全网最低价云服务器，新用户首年仅需九十九元。",
    ],
    "en": [
        "Subscribe to our newsletter for the latest tech news and exclusive deals.",
        "Limited offer: sign up today and get thirty days of premium for free.",
        "Sponsored: the cheapest cloud servers on the web, first year only $99.",
    ],
}
FOOTERS = {
    "zh": [
        "\n本文转载自互联网，版权归原作者所有，如有侵权请联系删除。责任编辑：王小明",
        "\n（完）更多精彩内容请访问我们的网站。来源：技术文档中心",
    ],
    "en": [
        "\nThis article was reposted from the web; all rights belong to the original author. Editor: J. Smith",
        "\n(End) For more great content visit our website. Source: Tech Docs Center",
    ],
}
_SENTENCE = re.compile(r"(?<=[。！？.!?\n])")


def _sentences(text: str) -> list[str]:
    return [s for s in _SENTENCE.split(text) if s]


def edit_ad(doc: Doc, rng: random.Random) -> str:
    parts = _sentences(doc.text)
    parts.insert(rng.randrange(len(parts) + 1), rng.choice(ADS[doc.lang]))
    return "".join(parts)


def edit_delete_sentence(doc: Doc, rng: random.Random) -> str:
    parts = _sentences(doc.text)
    if len(parts) > 1:
        del parts[rng.randrange(len(parts))]
    return "".join(parts)


def edit_numbers(doc: Doc, rng: random.Random) -> str:
    if not re.search(r"\d", doc.text):
        return doc.text + (
            f"\n阅读 {rng.randrange(100, 99999)} 次" if doc.lang == "zh" else f"\nViews: {rng.randrange(100, 99999)}"
        )
    return re.sub(r"\d+", lambda m: str(rng.randrange(10 ** len(m.group())))[: len(m.group())], doc.text)


def edit_chars(doc: Doc, rng: random.Random, count: int = 4) -> str:
    chars = list(doc.text)
    pattern = re.compile(r"[\u4e00-\u9fff]" if doc.lang == "zh" else r"[a-z]")
    positions = [i for i, c in enumerate(chars) if pattern.match(c)]
    pool = [chars[i] for i in positions]
    for i in rng.sample(positions, min(count, len(positions))):
        chars[i] = rng.choice(pool)
    return "".join(chars)


def edit_footer(doc: Doc, rng: random.Random) -> str:
    return doc.text + rng.choice(FOOTERS[doc.lang])


TEMPLATES = {
    "zh": [
        (
            "首页 > 技术文档 > 系统管理\n登录 | 注册 | 帮助中心\n",
            "\n上一篇 下一篇\n相关文章推荐\n版权所有 © 2024 技术文档中心 京ICP备12345678号 联系我们 隐私政策",
        ),
        (
            "【开源中国社区】频道：Linux 运维 发布时间：2023-05-12 阅读量：1024\n",
            "\n本文由网友投稿，不代表本站观点。欢迎转发分享，转载请注明出处。\n扫码关注公众号 获取更多教程",
        ),
        (
            "导航：新闻 | 下载 | 论坛 | 文档 | 关于我们\n当前位置：文档库\n",
            "\n评论（0）\n发表评论请先登录。\n热门标签：Linux Debian 软件包 系统 网络 安全",
        ),
    ],
    "en": [
        (
            "Home > Docs > Administration\nSign in | Register | Help Center\n",
            "\nPrevious article  Next article\nRelated posts\nCopyright 2024 Tech Docs Center. Contact us. Privacy.",
        ),
        (
            "[Open Source Weekly] Channel: Linux ops  Published: 2023-05-12  Views: 1024\n",
            "\nThis post was contributed by a reader and does not represent our views. Share it, credit the source.",
        ),
        (
            "Navigation: News | Downloads | Forum | Docs | About\nYou are here: Library\n",
            "\nComments (0)\nSign in to comment.\nPopular tags: Linux Debian packages system network security",
        ),
    ],
}


def in_template(doc: Doc, template: int) -> str:
    header, footer = TEMPLATES[doc.lang][template % len(TEMPLATES[doc.lang])]
    return header + doc.text + footer


def _paragraphs(text: str) -> list[str]:
    return text.split("\n")


def older_revision(doc: Doc, donor: Doc, rng: random.Random) -> str:
    """The page with one of its longer paragraphs replaced by a paragraph of another page of the same
    source, as a revision that rewrote it would leave the rest."""
    parts = _paragraphs(doc.text)
    longest = sorted(range(len(parts)), key=lambda i: len(parts[i]), reverse=True)[: max(1, len(parts) // 3)]
    target = rng.choice(longest)
    replacements = [p for p in _paragraphs(donor.text) if len(p) >= min(40, len(parts[target]))] or [donor.text]
    parts[target] = rng.choice(replacements)
    return "\n".join(parts)


def realistic_copies(originals: list[Doc], count: int, rng: random.Random) -> list[Doc]:
    """``count`` copies of each realistic kind: the article in a template, two articles on one template
    (both wrapped, so that the pair shares only the template), and an older revision."""
    by_source: dict[str, list[Doc]] = {}
    for d in originals:
        by_source.setdefault(d.source, []).append(d)
    out = []
    for n, doc in enumerate(rng.sample(originals, count)):
        out.append(Doc(f"{doc.id}~template{n}", doc.source, doc.lang, in_template(doc, n), doc.id, ["template"]))
    for n in range(count):
        a, b = rng.sample(originals, 2)
        while b.lang != a.lang:
            b = rng.choice(originals)
        for doc in (a, b):
            out.append(
                Doc(f"{doc.id}~shared-template{n}", doc.source, doc.lang, in_template(doc, n + 1), doc.id, ["template"])
            )
    for n, doc in enumerate(rng.sample(originals, count)):
        donor = rng.choice(by_source[doc.source])
        out.append(
            Doc(f"{doc.id}~revision{n}", doc.source, doc.lang, older_revision(doc, donor, rng), doc.id, ["revision"])
        )
    return out


def half_of(doc: Doc, salt: str = "split-1") -> str:
    """ "tune" or "report": a stable split by the original document, so that copies share their original's
    half.  Choose on "tune", report on "report"."""
    import hashlib

    root = doc.edited_from or doc.id
    return "tune" if hashlib.sha256((salt + root).encode()).digest()[0] < 128 else "report"


EDITS = {
    "ad": edit_ad,
    "delete-sentence": edit_delete_sentence,
    "numbers": edit_numbers,
    "chars": edit_chars,
    "footer": edit_footer,
}


LENGTH_BUCKETS = ((0, 400), (400, 800), (800, 1600), (1600, 6400), (6400, None))


def stratified(originals: list[Doc], count: int, rng: random.Random) -> list[Doc]:
    """``count`` originals, as evenly as they allow over LENGTH_BUCKETS, so short pages get copies too."""
    buckets = [
        [d for d in originals if lo <= len(d.text) and (hi is None or len(d.text) < hi)] for lo, hi in LENGTH_BUCKETS
    ]
    chosen: list[Doc] = []
    for n, bucket in enumerate(buckets):
        want = (count - len(chosen)) // (len(buckets) - n)
        chosen += rng.sample(bucket, min(want, len(bucket)))
    return chosen


def edited_copies(originals: list[Doc], count: int, rng: random.Random, even_lengths: bool = False) -> list[Doc]:
    copies = []
    picked = stratified(originals, count, rng) if even_lengths else rng.sample(originals, count)
    for n, doc in enumerate(picked):
        names = [rng.choice(list(EDITS))] if n % 3 else rng.sample(list(EDITS), rng.choice([2, 3]))
        current = doc
        for name in names:
            current = Doc(current.id, doc.source, doc.lang, EDITS[name](current, rng))
        copies.append(Doc(f"{doc.id}~edit{n}", doc.source, doc.lang, current.text, doc.id, names))
    return copies


def load_corpus(
    n_edited: int = 600, seed: int = 20261121, cache: Path = CACHE, whole: bool = False, n_realistic: int = 0
) -> list[Doc]:
    """Originals plus ``n_edited`` edited copies (and ``n_realistic`` of each realistic kind); cached as JSON
    lines under var/corpus."""
    form = f"whole-{n_realistic}-" if whole else ""
    path = cache / f"corpus-{form}{n_edited}-{seed}.jsonl"
    if path.is_file():
        return [Doc(**json.loads(line)) for line in path.read_text(encoding="utf-8").splitlines()]
    # zh and en only: the edited corpus predates the traditional pages (pairs.py uses those).
    originals = [d for d in original_docs(fetch_packages(cache), whole) if d.lang in ("zh", "en")]
    rng = random.Random(seed)
    edited = edited_copies(originals, n_edited, rng, even_lengths=whole)
    docs = originals + edited + realistic_copies(originals, n_realistic, rng)
    path.write_text("".join(json.dumps(asdict(d), ensure_ascii=False) + "\n" for d in docs), encoding="utf-8")
    return docs


if __name__ == "__main__":
    corpus = load_corpus()
    by_source: dict[str, int] = {}
    for d in corpus:
        by_source[d.source] = by_source.get(d.source, 0) + 1
    print(len(corpus), "documents", by_source)
