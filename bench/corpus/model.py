"""An agent-neutral conversation; each agent module renders it in its own format."""

from __future__ import annotations

from dataclasses import dataclass, field

from corpus.vocab import Person, Project


@dataclass(frozen=True)
class ToolCall:
    kind: str  # read | bash | grep | edit | write | glob
    args: dict[str, str]
    output: str
    is_error: bool
    started_ms: int
    ended_ms: int


@dataclass(frozen=True)
class Step:
    """One assistant message: optional thinking, optional prose, tool calls."""

    thinking: str
    text: str
    tools: tuple[ToolCall, ...]
    at_ms: int


@dataclass(frozen=True)
class Turn:
    prompt: str
    prompt_ms: int
    steps: tuple[Step, ...]
    final: str  # the closing assistant prose
    final_ms: int
    # Agent control-plane chatter around the turn: (role, text).
    control: tuple[tuple[str, str], ...] = ()
    final_thinking: str = ""  # thinking next to the closing prose


@dataclass
class SessionContext:
    person: Person
    project: Project
    cwd: str
    started_ms: int
    provider: str
    model: str
    clock_ms: int = 0
    heavy: bool = False
    zh: bool | None = None  # the user writes Chinese (drawn at the first prompt, by shapes that have such users)
    turns: list[Turn] = field(default_factory=list)

    def tick(self, rng_seconds: float) -> int:
        self.clock_ms += int(rng_seconds * 1000)
        return self.clock_ms
