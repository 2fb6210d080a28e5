"""The golden texts: every kind of input the fingerprint must keep giving the same 64 bits for."""

from __future__ import annotations

import json
from pathlib import Path

HERE = Path(__file__).resolve().parent

ENGLISH = {
    "en-sentence": "The quick brown fox jumps over the lazy dog.",
    "en-paragraph": (
        "Near-duplicate detection finds documents that differ only by small edits: an inserted advertisement, "
        "a changed counter, a footer added by a site that copied the page. Exact hashing misses them; "
        "SimHash maps similar documents to fingerprints that differ in few bits."
    ),
    "en-paragraph-edited": (
        "Near-duplicate detection finds documents that differ only by small edits: an inserted advertisement, "
        "a changed counter, a footer added by a site that mirrored the page. Exact hashing misses them; "
        "SimHash maps similar documents to fingerprints that differ in only a few bits."
    ),
    "en-code": "def fingerprint(text: str) -> int:\n    return simhash(features(tokenize(normalize(text))))\n",
    "en-numbers": "Version 2.6.1 released on 2024-10-02 with 1,234 fixes and 56 new features (99.9% uptime).",
    "en-url": "See https://example.com/path?query=1&x=y#frag or mail admin@example.org for help.",
    "en-upper": "THE QUICK BROWN FOX JUMPS OVER THE LAZY DOG.",
    "en-accents": "Café crème brûlée, naïve façade, Straße, ΑΘΗΝΑ, Москва.",
    "en-repeated-word": "spam " * 200,
    # Two pages of one manual, one with another name put in (recipe v6 tells them apart: renames.py).
    "en-manpage": (
        "NAME\nlogname - print user's login name\nSYNOPSIS\nlogname [OPTION]\nDESCRIPTION\n"
        "Print the name of the current user.\n--help display this help and exit\n"
        "--version output version information and exit\nAUTHOR\nWritten by FIXME: unknown.\n"
        "REPORTING BUGS\nGNU coreutils online help: <https://www.gnu.org/software/coreutils/>\n"
        "COPYRIGHT\nCopyright (C) 2023 Free Software Foundation, Inc. License GPLv3+.\n"
        "SEE ALSO\nFull documentation <https://www.gnu.org/software/coreutils/logname>\n"
        "or available locally via: info '(coreutils) logname invocation'\n"
    ),
    "en-manpage-renamed": (
        "NAME\nhostid - print the numeric identifier for the current host\nSYNOPSIS\nhostid [OPTION]\n"
        "DESCRIPTION\nPrint the numeric identifier (in hexadecimal) for the current host.\n"
        "--help display this help and exit\n"
        "--version output version information and exit\nAUTHOR\nWritten by Jim Meyering.\n"
        "REPORTING BUGS\nGNU coreutils online help: <https://www.gnu.org/software/coreutils/>\n"
        "COPYRIGHT\nCopyright (C) 2023 Free Software Foundation, Inc. License GPLv3+.\n"
        "SEE ALSO\nFull documentation <https://www.gnu.org/software/coreutils/hostid>\n"
        "or available locally via: info '(coreutils) hostid invocation'\n"
    ),
}

CHINESE = {
    "zh-sentence": "我们今天在北京大学的计算机实验室里讨论了海量数据的相似度问题。",
    "zh-sentence-edited": "我们昨天在北京大学的计算机实验室里讨论了海量数据的相似度问题。",
    "zh-news": (
        "据新华社报道，今年全国粮食总产量达到六亿九千万吨，比上年增长百分之一点三，连续九年稳定在"
        "六亿五千万吨以上。农业农村部表示，将继续加强耕地保护和高标准农田建设，确保粮食安全。"
    ),
    "zh-news-ad": (
        "据新华社报道，今年全国粮食总产量达到六亿九千万吨，比上年增长百分之一点三，连续九年稳定在"
        "六亿五千万吨以上。关注我们的公众号获取更多资讯。农业农村部表示，将继续加强耕地保护和高标准农田建设，确保粮食安全。"
    ),
    "zh-traditional": "我們今天在北京大學的計算機實驗室裡討論了海量數據的相似度問題。",
    "zh-fullwidth-punct": "你好，世界！这是一个测试：（括号）“引号”《书名》……",
    "zh-ext-a": "㐀㐁㐂是扩展A区的汉字，𠀀𠀁是扩展B区的汉字。",
    "zh-single-char": "字",
    "zh-poem": "床前明月光，疑是地上霜。举头望明月，低头思故乡。",
}

MIXED = {
    "mixed-tech": "使用 HBase 2.6 存储 64 位 SimHash 指纹，通过 Thrift 网关和 happybase 访问，查询延迟低于 2 ms。",
    "mixed-fullwidth-latin": "使用ＨＢａｓｅ　２．６存储６４位ＳｉｍＨａｓｈ指纹",
    "mixed-halfwidth-latin": "使用HBase 2.6存储64位SimHash指纹",
    "mixed-japanese": "東京は日本の首都です。カタカナとひらがなも含みます。",
    "mixed-korean": "서울은 한국의 수도입니다. 中文和한국어混合。",
    "mixed-html": "<p>这是<b>加粗</b>的文字，<a href='x'>链接</a>。</p>",
    "mixed-ligature-circled": "ﬁle ① ② ③ ㎏ ㍿",
}

EDGE = {
    "empty": "",
    "whitespace": " \t\n\r\u3000  ",
    "punctuation-ascii": "!!! ??? ... --- ;;; ,,, ()[]{}<>",
    "punctuation-cjk": "，。！？；：“”‘’（）《》【】……——",
    "emoji": "😀😃😄😁🎉🚀👍🏽👨‍👩‍👧",
    "emoji-with-text": "好消息😀今天发布了新版本🚀",
    "control-chars": "a\x00b\x01c\x7fd",
    "digits-only": "1234567890",
    "one-latin-letter": "a",
    "zero-width": "零\u200b宽\u200d字\ufeff符",
    "html-entities": "&nbsp;&nbsp;&nbsp;&nbsp;第一段&amp;第二段&#160;&#x3000;&lt;b&gt;粗体&lt;/b&gt;&amp;nbsp;",
    "html-tags-crlf": '<div class="c">第一行<br/>\r\n<span style="x">第二行</span></div>\r\n<!-- note -->末行',
    "sentences-and-menu": (
        "首页 | 新闻 | 下载 | 论坛\n当前位置：首页 > 文档\n"
        "这是一篇文章的第一个句子，它足够长，可以算作正文里的句子。第二句也很长，讲的是同一件事情的另一面。\n"
        "短句。\n版权所有 © 2024 某某网 京ICP备12345678号"
    ),
    "combining": "e\u0301 vs \u00e9",
    "surrogate-free-astral": "𝔘𝔫𝔦𝔠𝔬𝔡𝔢 𝕞𝕒𝕥𝕙",
}


def manual_page(name: str, what: str) -> str:
    """A page of a family of manual pages: its name, a line of its own, and the family's boilerplate (recipe v6
    tells two of them apart: renames.py)."""
    options = "\n".join(f"-{c}, --option-{c} change how {name} reads its input, as option {c} says" for c in "abcdefg")
    return (
        f"NAME\n{name} - {what}\nSYNOPSIS\n{name} [OPTION]... [FILE]...\nDESCRIPTION\n{what.capitalize()}.\n"
        f"{options}\n--help display this help and exit\n--version output version information and exit\n"
        "AUTHOR\nWritten by the maintainers of the family.\nREPORTING BUGS\n"
        "GNU coreutils online help: <https://www.gnu.org/software/coreutils/>\n"
        "Report any translation bugs to <https://translationproject.org/team/>\n"
        "COPYRIGHT\nCopyright (C) 2023 Free Software Foundation, Inc. License GPLv3+: GNU GPL version 3 or later.\n"
        "This is free software: you are free to change and redistribute it. There is NO WARRANTY.\n"
        f"SEE ALSO\nFull documentation <https://www.gnu.org/software/coreutils/{name}>\n"
        f"or available locally via: info '(coreutils) {name} invocation'\n"
    )


def page_in_template(seed: int) -> tuple[str, str]:
    """(an article inside another site's header and footer, the article alone), random Han text: the template
    moves the page's fingerprint out of the article's reach (10-14 bits at seeds 0, 1 and 2; some seeds stay
    near); its first part (a tenth of lines off each end) is the article, and the sketches call them one
    text.  Recipe v7's part rows are what finds one from the other (simhash_server/index/keys.py)."""
    import random

    def line(rng: random.Random, chars: int) -> str:
        return "".join(chr(0x4E00 + rng.randrange(20000)) for _ in range(chars)) + "。"

    rng, site = random.Random(seed), random.Random(1000 + seed)
    article = [line(rng, 24) for _ in range(16)]
    header, footer = [line(site, 50) for _ in range(2)], [line(site, 50) for _ in range(2)]
    return "\n".join(header + article + footer), "\n".join(article)


def megabyte_text() -> str:
    """About 1 MB of mixed Chinese text, made deterministically (a counter makes every block differ)."""
    blocks = []
    size, n = 0, 0
    base = CHINESE["zh-news"] + ENGLISH["en-paragraph"] + MIXED["mixed-tech"]
    while size < 1_000_000:
        block = f"第{n}段：{base}（编号 {n * 7919 % 100003}）\n"
        blocks.append(block)
        size += len(block.encode("utf-8"))
        n += 1
    return "".join(blocks)


def golden_texts() -> dict[str, str]:
    texts: dict[str, str] = {}
    texts.update(ENGLISH)
    texts.update(CHINESE)
    texts.update(MIXED)
    texts.update(EDGE)
    texts.update(json.loads((HERE / "zh_excerpts.json").read_text(encoding="utf-8")))
    texts["one-megabyte"] = megabyte_text()
    return texts
