"""Copies a reader calls the same article, through Deduplicate on a real HBase with the default recipe (v5):
a page inside another site's template, a page with `&nbsp;` indents and tags left in, and a page in
traditional characters are each refused as a duplicate of the stored original; a different page in the same
template and an older revision are stored as new."""

from __future__ import annotations

import random

import pytest
from opencc_purepy import OpenCC

from simhash_server.fingerprint import FINGERPRINT_VERSION, V7

PARAGRAPHS = [
    "海量数据的相似度计算是搜索引擎和推荐系统里的基础问题，几乎每个大型网站都要面对它，而且规模越来越大。",
    "把一篇文章变成六十四位的指纹以后，相似的文章会得到相近的指纹，汉明距离小于等于三就认为是近似重复。",
    "为了在几十亿条指纹里快速查找，我们把指纹分成五段，任意两段组合成一个抽屉，一共有十个抽屉可以查询。",
    "查询的时候只需要扫描十个前缀，然后在候选里面计算异或和比特数，就能找到所有足够接近的指纹和文档。",
    "这种方法来自谷歌发表的网页去重论文，后来被广泛用于网页爬虫、新闻聚合、论文查重和广告审核等场景。",
    "在实际的系统里，还要考虑文章被转载到别的网站时带上的导航、页脚和广告，这些内容不应该影响判断结果。",
    "数据库管理员每天都要检查备份是否完整，恢复演练每个季度至少进行一次，演练的结果要写进运维报告里。",
    "软件包的依赖关系由包管理器自动解决，用户只需要输入安装命令，系统就会下载并配置所有需要的组件。",
    "网络防火墙默认拒绝所有进入的连接，管理员需要为每个对外提供的服务单独打开端口，并记录变更原因。",
    "日志轮转可以防止磁盘被写满，旧的日志会被压缩保存一段时间，然后按照保留策略自动删除以节省空间。",
]


def page(seed: int, paragraphs: int = 6) -> str:
    rng = random.Random(seed)
    return "\n".join(rng.sample(PARAGRAPHS, paragraphs)) + f"\n本文编号{seed}，最后更新于2024年5月12日。"


def template(body: str, site: str) -> str:
    header = (
        f"{site} | 首页 | 新闻 | 下载 | 论坛 | 文档 | 关于我们\n当前位置：首页 > 文档 > 正文\n"
        f"发布时间：2023-06-01 来源：{site}\n"
    )
    footer = (
        "\n上一篇：如何配置网络\n下一篇：软件包管理入门\n相关文章\n· 系统管理员手册\n· 备份与恢复\n· 日志分析工具\n"
        f"热门标签：Linux 运维 数据库 安全\n版权所有 © 2010-2024 {site} 保留所有权利 京ICP备12345678号"
    )
    return header + body + footer


def nbsp(body: str) -> str:
    return "\n&nbsp;\n".join(f"<p>&nbsp;&nbsp;&nbsp;&nbsp;{line}</p>" for line in body.split("\n"))


@pytest.fixture(scope="module")
def client(server):
    from simhash_client import SimHashClient

    assert FINGERPRINT_VERSION == V7  # the server's index is a new one, so it has the default recipe
    with SimHashClient(f"127.0.0.1:{server.port}", timeout=20) as c:
        yield c


@pytest.mark.parametrize(
    ("kind", "seed", "copy"),
    [
        ("template", 1, lambda body: template(body, "开源技术社区")),
        ("nbsp", 2, nbsp),
        ("traditional", 3, lambda body: OpenCC("s2t").convert(body)),
    ],
)
def test_a_copy_a_reader_calls_the_same_article_is_refused_as_a_duplicate(client, ids, kind, seed, copy) -> None:
    original = page(seed)
    assert client.deduplicate(ids + "original", text=original).stored
    answer = client.deduplicate(ids + kind, text=copy(original))
    assert not answer.stored, kind
    assert [h.doc_id for h in answer.hits] == [ids + "original"]
    assert answer.hits[0].similarity is not None and answer.hits[0].similarity > 0.9


def test_different_articles_in_one_template_and_a_rewrite_are_stored(client, ids) -> None:
    first, second = page(501), page(502)
    assert client.deduplicate(ids + "first", text=template(first, "某某技术网")).stored
    assert client.deduplicate(ids + "second", text=template(second, "某某技术网")).stored
    lines = first.split("\n")
    others = [p for p in PARAGRAPHS if p not in lines]  # 4 of its 6 paragraphs rewritten
    rewritten = "\n".join([*lines[:2], *others[:4], lines[-1]])
    assert client.deduplicate(ids + "rewrite", text=rewritten).stored
