"""Recipe v4's normalisation and features: markup, invisible characters, scripts and digits folded; segments
weighed by how much they read like prose."""

from __future__ import annotations

import random

import numpy as np
import pytest
from opencc_purepy import OpenCC

from simhash_server.fingerprint import V3, V4, V4_NOFOLD, fingerprint
from simhash_server.fingerprint.features import character_grams, segment_grams, segment_text
from simhash_server.fingerprint.markup import strip_markup
from simhash_server.fingerprint.minhash import tiered_minhash_bits
from simhash_server.fingerprint.normalize import FOLDED, UNFOLDED, normalize
from simhash_server.fingerprint.script import fold_script, script_folding
from simhash_server.fingerprint.sentences import segments

ARTICLE = (
    "海量数据的相似度计算是搜索引擎和推荐系统里的基础问题，几乎每个大型网站都要面对它。"
    "把一篇文章变成六十四位的指纹以后，相似的文章会得到相近的指纹，汉明距离小于等于三就认为是近似重复。"
    "为了在几十亿条指纹里快速查找，我们把指纹分成五段，任意两段组合成一个抽屉，一共有十个抽屉可以查询。"
    "查询的时候只需要扫描十个前缀，然后在候选里面计算异或和比特数，就能找到所有足够接近的指纹。"
    "这种方法来自谷歌发表的网页去重论文，后来被广泛用于网页爬虫、新闻聚合、论文查重和广告审核等场景。"
    "在实际的系统里，还要考虑文章被转载到别的网站时带上的导航、页脚和广告，这些内容不应该影响判断。"
)


def distance(a: int, b: int) -> int:
    return bin(a ^ b).count("1")


@pytest.mark.parametrize(
    ("raw", "clean"),
    [
        ("&nbsp;&nbsp;正文&amp;注释&#160;&#x3000;", "\xa0\xa0正文&注释\xa0\u3000"),
        ("&amp;nbsp;一", "\xa0一"),  # escaped twice
        ('<p class="x">段</p><br/>行<span style="a">字</span>', "\n段\n\n行字"),
        ("a\r\nb\rc", "a\nb\nc"),
        ("#include <stdio.h> and cp <file> <dest>", "#include <stdio.h> and cp <file> <dest>"),
        ("x<script>var a = '<p>';</script>y<style>p{}</style><!-- c -->z", "xyz"),
        ("1 < 2 and 3 > 2", "1 < 2 and 3 > 2"),
    ],
)
def test_markup_is_taken_out_and_text_that_only_looks_like_it_stays(raw: str, clean: str) -> None:
    assert strip_markup(raw) == clean


@pytest.mark.parametrize("config", ["s2t", "s2tw", "s2hk"])
def test_a_page_converted_by_opencc_folds_back_to_its_source(config: str) -> None:
    converted = OpenCC(config).convert(ARTICLE)
    assert converted != ARTICLE
    assert fold_script(converted) == fold_script(ARTICLE)
    assert fingerprint(converted, V4).value == fingerprint(ARTICLE, V4).value
    assert distance(fingerprint(converted, V3).value, fingerprint(ARTICLE, V3).value) > 10  # v3 never folded


def test_taiwan_phrases_fold_to_the_mainland_s() -> None:
    from simhash_server.fingerprint.normalize import fold_digits_and_phrases

    assert fold_digits_and_phrases(normalize("這個軟體的程式碼存在資料庫裡", form=FOLDED), True) == normalize(
        "这个软件的代码存在数据库里", form=FOLDED
    )
    text = "我们用软件和数据库处理信息，程序员写代码。" * 3 + ARTICLE
    taiwan = OpenCC("s2twp").convert(text)
    assert "軟體" in taiwan and "資料庫" in taiwan
    assert distance(fingerprint(taiwan, V4).value, fingerprint(text, V4).value) <= 3
    assert distance(fingerprint(taiwan, V4_NOFOLD).value, fingerprint(text, V4_NOFOLD).value) > 3


def test_the_folding_is_opencc_s_own_and_keeps_the_scripts_apart_when_asked() -> None:
    folding = script_folding()
    assert folding["發"] == "发" and folding["髮"] == "发" and folding["頭"] == "头"
    assert "发" not in folding  # the simplified form is each group's own
    assert len(folding) > 3000
    text = "頭髮乾淨"
    assert normalize(text, form=FOLDED) == "头发干净"
    assert normalize(text, form=UNFOLDED) == text
    assert fingerprint(text, V4_NOFOLD).value != fingerprint("头发干净", V4_NOFOLD).value


def test_entities_invisible_characters_and_numbers_do_not_move_a_v4_fingerprint() -> None:
    lines = ARTICLE.replace("。", "。\n").splitlines()
    nbsp = "\n&nbsp;\n".join("&nbsp;&nbsp;&nbsp;&nbsp;" + line + "<br/>" for line in lines)
    hidden = "\ufeff" + "\u200b".join(ARTICLE[i : i + 7] for i in range(0, len(ARTICLE), 7))
    dated = ARTICLE + "发布于2024年5月12日，阅读3012次。"
    redated = ARTICLE + "发布于2023年11月2日，阅读17次。"
    assert fingerprint(nbsp, V4).value == fingerprint("\n".join(lines), V4).value == fingerprint(ARTICLE, V4).value
    assert fingerprint(hidden, V4).value == fingerprint(ARTICLE, V4).value
    assert fingerprint(dated, V4).value == fingerprint(redated, V4).value
    from simhash_server.fingerprint.normalize import fold_digits_and_phrases

    assert fold_digits_and_phrases(normalize("版本 ２.6.1，共 1,234 项", form=FOLDED), True) == "版本 0.0.0,共 0,0 项"


def test_segments_are_tiered_by_how_much_they_read_like_prose() -> None:
    text = normalize("首页 | 新闻 | 下载\n" + ARTICLE.split("。")[0] + "。\n短句四个词啊。\n好。", form=FOLDED)
    tiers = [tier for _, tier in segments(text)]
    assert tiers == [2, 0, 1, 2]
    tokens = [token for part, _ in segments(text) for token in part]
    from simhash_server.fingerprint.tokens import tokenize

    assert tokens == tokenize(text)  # segments split the text's own tokens, nothing else


def test_a_site_template_around_an_article_leaves_its_v4_fingerprint_near() -> None:
    rng = random.Random(7)
    menu = ["首页", "新闻", "资讯", "下载", "论坛", "文档", "教程", "问答", "关于我们", "联系我们"]
    for trial in range(20):
        header = " | ".join(rng.sample(menu, 6)) + "\n当前位置：首页 > 文档 > 正文\n发布时间：2023-05-12 来源：某某网\n"
        footer = (
            "\n上一篇：如何安装软件\n下一篇：网络配置指南\n相关文章\n· 系统管理入门\n· 软件包的使用\n"
            "版权所有 © 2024 某某网"
        )
        copy = header + ARTICLE.replace("。", "。\n") + footer
        assert distance(fingerprint(copy, V4).value, fingerprint(ARTICLE, V4).value) <= 3, trial
        assert distance(fingerprint(copy, V3).value, fingerprint(ARTICLE, V3).value) > 3 or trial > 0


def test_tiers_only_weigh_never_exclude() -> None:
    # A page without a single sentence still gets a fingerprint of its own lines.
    menu_a = segment_grams(segments(normalize("首页 | 新闻\n下载 | 论坛\n文档", form=FOLDED)))
    menu_b = segment_grams(segments(normalize("首页 | 资讯\n视频 | 博客\n招聘", form=FOLDED)))
    assert set(menu_a[1].tolist()) == {2}
    assert tiered_minhash_bits(*menu_a) != tiered_minhash_bits(*menu_b) != 0
    # Each distinct gram counts once, at its lowest tier: "abcd" is one gram, met in tiers 2 and 0; the
    # tier-1 segment "a b c" makes "a b " and " b c".
    hashes, tiers = segment_grams([(["abcd"], 2), (["a", "b", "c"], 1), (["abcd"], 0)])
    assert hashes.size == 3 and sorted(tiers.tolist()) == [0, 1, 1]
    assert tiered_minhash_bits(np.zeros(0, np.uint64), np.zeros(0, np.uint8)) == 0


def test_grams_weigh_a_wide_character_twice_and_never_cross_a_segment() -> None:
    assert segment_text(["软件", "包", "debian", "的", "apt"]) == "软件包 debian 的 apt"
    assert character_grams("软件包 de") == {"软件", "件包", "包 d", " de"}  # the last character is in one too
    assert character_grams("kernel") == {"kern", "erne", "rnel"}
    assert character_grams("ab") == {"ab"}  # lighter than a gram: one gram of itself
    assert character_grams("") == set() and segment_grams([])[0].size == 0
    # A typo changes the 4 grams around it and no others.
    before, after = character_grams("the quick brown fox"), character_grams("the quick briwn fox")
    assert len(before - after) == 4 and len(before & after) == len(before) - 4
