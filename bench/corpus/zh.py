"""Non-ASCII prose for the `zh-mixed` shape: Simplified Chinese requests and replies, typographic English.

Chinese text is assembled from sentence templates whose `{slot}`s are filled one
draw at a time (`fill`): Chinese vocabulary (`{zn}` a technical noun, `{zv}` a
verb, `{zs}` a symptom, `{zt}` when, `{zw}` where) and the English material a
Chinese-speaking developer types inline, given by the caller (`{path}`,
`{cmd}`, `{ident}`, `{lib}`, `{v}`, `{err}`, `{trace}`, `{code}`, `{host}`, …).
A prompt or reply is one or more sentences drawn from separate pools, so the
same template rarely meets the same fillers twice.

`typeset` turns the ASCII punctuation of English prose into what models write
(em dashes, curly apostrophes, ellipses), outside inline code and fences.
"""

from __future__ import annotations

import random
import re
from collections.abc import Callable, Mapping

Slots = Mapping[str, Callable[[], str]]

NOUNS = tuple(
    (
        "缓存 索引 配置文件 数据库连接 连接池 锁 队列 迁移脚本 日志 测试用例 接口 参数 依赖 "
        "构建脚本 部署流程 会话 权限校验 超时设置 重试逻辑 并发控制 序列化 路径解析 环境变量 时间戳 "
        "字符编码 内存占用 子进程 线程池 事务 字段 表结构 命令行参数 默认值 返回值 错误处理 "
        "单元测试 集成测试 前端页面 后端服务 数据库 知识库 同步任务 定时任务 文件监听 增量更新 "
        "全量重建 分页逻辑 排序规则 哈希值 签名校验 令牌刷新 上传接口 下载链接 压缩包 镜像 容器 "
        "工作区 分支 提交记录 补丁"
    ).split()
)
VERBS = tuple(
    (
        "修复 重构 优化 检查 排查 添加 删掉 拆分 合并 替换 升级 回滚 迁移 验证 简化 改写 补充 "
        "统一 缓存 延迟加载 批量处理 去重 限制 记录 捕获"
    ).split()
)
SYMPTOMS = (
    "很慢",
    "报错",
    "卡住不动",
    "内存一直涨",
    "偶发失败",
    "不生效",
    "重复写入",
    "丢数据",
    "输出乱码",
    "返回 500",
    "超时",
    "死锁",
    "结果不对",
    "测试挂了",
    "CPU 占满",
    "启动失败",
    "连接被拒绝",
    "权限不足",
    "崩溃退出",
    "数据对不上",
    "编译不过",
    "类型检查报错",
    "找不到模块",
    "路径不对",
)
WHEN = tuple(
    (
        "昨天 上周 合并之后 升级之后 今天早上 换了机器以后 从上次发布开始 切到新分支后 改完配置以后 "
        "重启之后 周末跑批的时候 数据量变大以后 刚才"
    ).split()
)
WHERE = (
    "本地",
    "CI 上",
    "测试环境",
    "生产环境",
    "staging 上",
    "我的笔记本上",
    "Docker 里",
    "远程机器上",
    "新同事的电脑上",
)

PROMPT_SHORT = (
    "继续",
    "好的，继续",
    "再跑一遍测试",
    "可以，提交吧",
    "不对，回滚刚才的改动",
    "嗯，试试另一种方法",
    "先别改，解释一下",
    "行",
    "没问题，合并吧",
    "还是报错",
    "现在可以了吗？",
    "把刚才的改动撤销",
    "用中文回答",
    "继续，别停",
    "看一下 CI 的结果",
)
PROMPT_ASK = (
    "修复 `{path}` 里的{zn}问题，{zt}开始{zw}{zs}。",
    "为什么 `{cmd}` 会报错？错误信息是：\n\n```\n{err}\n```",
    "帮我看看 `{ident}` 为什么{zs}，{zw}每次都能复现。",
    "升级 {lib} 到 {v} 之后 `{cmd}` 失败了：\n\n```\n{trace}\n```\n\n是不是{zn}的问题？",
    "给 `{pkg}` 加一个 `--{opt}` 选项，用来{zv}{zn}，默认关闭。",
    "`{path}` 里的{zn}写得太乱了，帮我{zv}一下，保持公共 API 不变。",
    "{zw}跑 `{cmd}` 要 {n} 秒，帮我分析一下时间都花在哪儿了。",
    "这个函数的错误处理对吗？\n\n{code}\n\n有问题就直接改。",
    "部署到 {host} 又失败了，日志在 `{logdir}`，{zt}还是好的。",
    "帮我写一下 `{test_path}` 的测试，覆盖{zn}为空和超时两种情况。",
    "为什么{zn}在{zw}{zs}？我怀疑是 `{ident}` 的{zn2}没处理好。",
    "请检查一下 `{path}` 和 `{path2}`，{zt}{zn}{zs}了。",
    "`{ident}` 返回的{zn}不对，期望是 {n} 条，实际只有 {n2} 条。",
    "能不能把{zn}的{zv}逻辑从 `{path}` 挪到 `{path2}`？现在两边各写了一遍。",
    "运行 `{cmd}` 出现 `{err_short}`，怎么解决？",
    "帮我把 {lib} 从 {v2} 升到 {v}，看看有没有破坏性改动。",
    "我想给{zn}加上{zn2}，最简单的做法是什么？先说思路，不要直接改代码。",
    "Review 一下这个 PR：`{ident}` 在 {lib} {v} 下还成立吗？",
    "{zt}同事说{zw}的{zn}{zs}，提交是 {sha}，帮我查一下改了什么。",
    "`{cmd}` 在{zw}能过，在{zw2}过不了，差别在哪里？",
    "解释一下 `{path}` 里 `{ident}` 的作用，还有它为什么要持有{zn}的锁。",
    "把所有用到 `{ident}` 的地方改成 `{ident2}`，注意{zn}的兼容性。",
    "{zn}的{zn2}需要{zv}，参考 {url} 的做法。",
    "这段日志是什么意思？\n\n```\n{trace}\n```",
    "帮我{zv} `{path}` 的{zn}，然后跑一下 `{cmd}` 确认没有回归。",
    "数据库迁移脚本在{zw}执行到一半{zs}，现在表结构是半新半旧的，怎么办？",
)
PROMPT_CONTEXT = (
    "{zt}还是好的。",
    "只在{zw}出现，{zw2}没问题。",
    "我已经试过清缓存，没用。",
    "相关代码在 `{path}`。",
    "日志里有一行 `{err_short}`。",
    "用的是 {lib} {v}。",
    "之前 `{ident}` 是同步的，后来改成了异步。",
    "这个问题影响到{zn}和{zn2}。",
    "同事 {colleague} 也遇到了。",
    "复现步骤：先 `{cmd}`，再重启服务。",
    "我怀疑和{zn}有关。",
    "大概每 {n} 次出现一次。",
    "上次是通过{zv}{zn}临时绕过去的。",
)
PROMPT_CONSTRAINT = (
    "不要改公共 API。",
    "先解释原因再动手。",
    "顺便补上测试。",
    "改完跑一下 `{cmd}`。",
    "改动尽量小。",
    "别引入新的依赖。",
    "写清楚根因。",
    "需要兼容 {lib} {v2}。",
    "如果要改配置，告诉我回滚方法。",
    "用中文回答，代码注释用英文。",
    "不确定的地方先问我。",
    "提交信息用英文写。",
)

COMMENTARY = (
    "先看一下 `{target}` 的实现。",
    "我先运行 `{target}` 复现一下。",
    "在仓库里搜一下 `{target}`。",
    "接下来修改 `{target}`。",
    "先读测试，再动代码。",
    "看看{zn}是在哪里初始化的。",
    "确认一下 `{target}` 的调用方。",
    "我来检查{zn}的配置。",
    "复现了，错误和你贴的一样。",
    "先跑一遍现有的测试，确认基线。",
    "`{target}` 里有两处{zn}逻辑，先看第一处。",
    "这里需要同时改{zn}和{zn2}。",
    "找到了可疑的地方，再确认一下。",
    "改完了，跑测试验证。",
)

FINAL_OPEN = (
    "问题出在 `{ident}`：它假设{zn}一定存在，但 {lib} {v} 之后不再成立。",
    "已修复。慢的原因是 `{ident}` 每次调用都重新读取{zn}（每次运行 {n} 次），现在按{zn2}缓存。",
    "找到两个问题，一个在 `{path}`，另一个在测试的 fixture 里。",
    "根因是{zn}没有加锁，并发写入时{zs}。",
    "原因是 `{ident}` 把{zn}当成了 UTF-8，而输入里有 GBK 编码的文件。",
    "这是 {lib} {v} 的行为变化：{zn}的默认值改了。",
    "结论：{zn}本身没问题，{zs}是因为 `{ident}` 吞掉了异常。",
    "已完成{zn}的{zv}，公共 API 没有变化。",
    "{zw}{zs}的原因找到了：`{cmd}` 用的是旧的{zn}。",
    "改好了。`{ident}` 现在会先检查{zn}，再处理{zn2}。",
    "问题不在 `{path}`，而在调用它的 `{path2}`：{zn}传错了。",
    "我没有直接修改{zn}，而是在 `{ident}` 外面加了一层{zn2}。",
    "总结一下这次 {lib} {v} 兼容性的改动：",
    "`{err_short}` 的意思是{zn}还没初始化就被访问了。",
)
FINAL_CHANGE = (
    "- `{path}`：{zv}{zn}，只在缓存过期时执行",
    "- `{path}`：{zv}了 `{ident}`，避免重复读取{zn}",
    "- `{path}`：在获取锁之前{zv}{zn}",
    "- `{path}`：把{zn}的默认值从 `{n}` 改成 `{n2}`",
    "- `{test_path}`：新增{zn}为空的测试",
    "- `{path}`：`{ident}` 改为按批处理，每批 {n} 条",
    "- `{path}`：删掉了没用的{zn}",
    "- `{path}`：捕获 `{exc}`，记录日志后重试",
    "- `{path}`：{zn}改成惰性加载",
    "- 配置：`{key}` 默认关闭",
)
FINAL_MORE = (
    "验证：`{cmd}` → {n} passed ✅",
    "已用 `{cmd}` 验证，{n} 个测试全部通过。",
    "风险：{zn}的格式变了，旧数据需要重新{zv}。",
    "回滚：还原 `{path}` 即可，不涉及数据迁移。",
    "注意：{zw}的{zn}我没有动。",
    "后续可以考虑把{zn}也{zv}掉，不过不在这次的范围内。",
    "这个改动不适用于{zn}为只读的情况。",
    "未解决：{zw}偶尔还会{zs}，需要更多日志才能确认。",
    "经验：{zn}相关的改动一定要先写测试。",
    "参考：{url}",
)

THINK_ZH = (
    "用户希望在写入之前先{zv}{zn}。",
    "`{ident}` 在 `{path}` 和命令行里都被调用了。",
    "如果{zn}为空，这里会直接抛异常。",
    "可能是缓存的 key 少了{zn}。",
    "先看 `{test_path}` 里的测试。",
    "不能改公共签名。",
    "用户说{zt}还是好的，那就看这之后的提交。",
    "{zw}和{zw2}的差别可能在环境变量。",
    "这个报错和{zn}有关，不是{zn2}。",
    "需要用中文回复。",
)

# English additions of the shape: status lists, flows with arrows, asides with dashes.
STATUS = (
    "{mark} `{cmd}` — {n} passed",
    "{mark} `ruff check` clean",
    "{mark} `mypy --strict` — {n2} errors in `{path}`",
    "{mark} `{ident}` handles an empty {en}",
    "{mark} docs updated",
    "{mark} `{path}` migrated",
)
FLOW = (
    "Flow now: `{ident}` → `{ident2}` → `{ident3}`.",
    "Before → after: {n} ms → {n2} ms per call.",
    "`{key}`: `{n}` → `{n2}`.",
    "The {en} goes request → `{ident}` → cache → response; the cache step was missing.",
)
ASIDE = (
    "That’s the only caller — the CLI goes through `{ident}` too.",
    "I didn’t touch `{path}` — it isn’t on this path.",
    "One caveat — the {en} is still read twice on a cold start.",
    "It’s a “{en}” in name only; nothing validates it.",
    "Hmm… the lock is taken before the {en} is read.",
    "The tests pass — but only because the fixture sets the {en} explicitly.",
)

_SLOT = re.compile(r"\{(\w+)\}")


def fill(rng: random.Random, template: str, slots: Slots) -> str:
    """The template with every `{slot}` drawn afresh (Chinese vocabulary here, the rest from `slots`);
    `{zn2}`, `{path2}`: another draw of the same kind (a repeated word is drawn once more)."""
    used: set[str] = set()

    def draw(m: re.Match[str]) -> str:
        name = m.group(1)
        base = name if name in slots else name.rstrip("0123456789")
        pool = _WORDS.get(base)
        value = rng.choice(pool) if pool is not None else slots[base]()
        if value in used and pool is not None:
            value = rng.choice(pool)
        used.add(value)
        return value

    return _SLOT.sub(draw, template)


_WORDS = {"zn": NOUNS, "zv": VERBS, "zs": SYMPTOMS, "zt": WHEN, "zw": WHERE}


def prompt(rng: random.Random, slots: Slots) -> str:
    if rng.random() < 0.08:
        return rng.choice(PROMPT_SHORT)
    parts = [fill(rng, rng.choice(PROMPT_ASK), slots)]
    if rng.random() < 0.55:
        parts.append(fill(rng, rng.choice(PROMPT_CONTEXT), slots))
    if rng.random() < 0.5:
        parts.append(fill(rng, rng.choice(PROMPT_CONSTRAINT), slots))
    text = parts[0]
    for part in parts[1:]:
        text += ("\n\n" if text.endswith("```") else "") + part
    return text


def commentary(rng: random.Random, slots: Slots) -> str:
    return fill(rng, rng.choice(COMMENTARY), slots)


def final(rng: random.Random, slots: Slots) -> list[str]:
    """The closing reply's paragraphs (the caller adds a code block)."""
    changes = "\n".join(fill(rng, rng.choice(FINAL_CHANGE), slots) for _ in range(rng.randint(1, 5)))
    parts = [fill(rng, rng.choice(FINAL_OPEN), slots), "改动：\n" + changes]
    parts += [fill(rng, rng.choice(FINAL_MORE), slots) for _ in range(rng.randint(0, 3))]
    return parts


def thinking_sentence(rng: random.Random, slots: Slots) -> str:
    return fill(rng, rng.choice(THINK_ZH), slots)


def status(rng: random.Random, slots: Slots) -> str:
    ok = rng.choice(("✅", "✅", "✓"))  # one style per list
    lines = []
    for template in rng.sample(STATUS, rng.randint(2, 5)):
        mark = "❌" if rng.random() < 0.2 else ok
        lines.append("- " + fill(rng, template, {**slots, "mark": lambda: mark}))
    return "Status:\n" + "\n".join(lines)


def flow(rng: random.Random, slots: Slots) -> str:
    return fill(rng, rng.choice(FLOW), slots)


def aside(rng: random.Random, slots: Slots) -> str:
    return fill(rng, rng.choice(ASIDE), slots)


_FENCE = re.compile(r"(```.*?```)", re.DOTALL)
_COMMA = re.compile(r", |; ")
_APOSTROPHE = re.compile(r"(?<=[A-Za-z])'(?=[a-z])")


def typeset(rng: random.Random, text: str, dash_p: float, curly_p: float, ellipsis_p: float) -> str:
    """English prose as a model writes it: per message, some `, ` / `; ` become em dashes,
    apostrophes curl, `...` and a closing `.` become `…`; text inside backticks (inline code, fences) is left alone."""
    dash = rng.random() < dash_p
    curly = rng.random() < curly_p
    dots = rng.random() < ellipsis_p
    if not (dash or curly or dots):
        return text
    spaced = rng.random() < 0.7  # "a — b" or "a—b": a model keeps one style per message
    dash_text = " — " if spaced else "—"
    out = []
    for i, block in enumerate(_FENCE.split(text)):
        if i % 2:  # a fenced block
            out.append(block)
            continue
        pieces = block.split("`")
        for j in range(0, len(pieces), 2):
            piece = pieces[j]
            if dash:
                piece = _COMMA.sub(lambda m: dash_text if rng.random() < 0.4 else m.group(0), piece)
            if curly:
                piece = _APOSTROPHE.sub("’", piece)
            if dots:
                piece = piece.replace("...", "…")
            pieces[j] = piece
        out.append("`".join(pieces))
    text = "".join(out)
    if dots and text.endswith(".") and not text.endswith(".."):
        text = text[:-1] + "…"  # "Checking the config…"
    return text
