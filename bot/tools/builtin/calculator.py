"""``calculator``: safe arithmetic over a parsed expression tree — never ``eval``.

Allowed: numbers, ``+ - * / // % **``, unary ``+ -``, parentheses, the constants ``pi``,
``e``, ``tau`` and the functions ``abs round min max sqrt exp log log10 log2 sin cos tan
asin acos atan floor ceil``. Everything else (names, attributes, calls of anything else,
strings, comprehensions) is refused. Sizes are bounded so that no expression can exhaust
memory or time: expression length, tree size, exponent, and result magnitude.
"""

from __future__ import annotations

import ast
import math
import operator
from collections.abc import Callable, Mapping

from pydantic import Field

from bot.tools.builtin.arguments import ToolArguments, parse_arguments, schema_of
from bot.tools.builtin.observation import ToolFailed
from bot.tools.spec import ToolContext, ToolKind, ToolResult, ToolSpec

MAX_EXPRESSION_CHARS = 500
MAX_NODES = 200
MAX_EXPONENT = 1000
MAX_INT_DIGITS = 1000
OUT_OF_RANGE = "the result is out of range (too large for a float)"

Number = int | float

_BINARY: dict[type[ast.operator], Callable[[Number, Number], Number]] = {
    ast.Add: operator.add,
    ast.Sub: operator.sub,
    ast.Mult: operator.mul,
    ast.Div: operator.truediv,
    ast.FloorDiv: operator.floordiv,
    ast.Mod: operator.mod,
}
_UNARY: dict[type[ast.unaryop], Callable[[Number], Number]] = {
    ast.UAdd: operator.pos,
    ast.USub: operator.neg,
}
_CONSTANTS: dict[str, float] = {"pi": math.pi, "e": math.e, "tau": math.tau}
_FUNCTIONS: dict[str, Callable[..., Number]] = {
    "abs": abs,
    "round": round,
    "min": min,
    "max": max,
    "sqrt": math.sqrt,
    "exp": math.exp,
    "log": math.log,
    "log10": math.log10,
    "log2": math.log2,
    "sin": math.sin,
    "cos": math.cos,
    "tan": math.tan,
    "asin": math.asin,
    "acos": math.acos,
    "atan": math.atan,
    "floor": math.floor,
    "ceil": math.ceil,
}


class CalculatorArguments(ToolArguments):
    expression: str = Field(
        min_length=1,
        max_length=MAX_EXPRESSION_CHARS,
        description="An arithmetic expression, e.g. '(17 * 3) / 4 + sqrt(2)'.",
    )


def _checked(value: Number) -> Number:
    if isinstance(value, bool):
        raise ToolFailed("booleans are not numbers here")
    if isinstance(value, int) and abs(value) >= 10**MAX_INT_DIGITS:
        raise ToolFailed(f"result has more than {MAX_INT_DIGITS} digits")
    if isinstance(value, float) and not math.isfinite(value):
        # float arithmetic overflows to inf (and inf - inf to nan) instead of raising
        raise ToolFailed(OUT_OF_RANGE)
    return value


def _power(base: Number, exponent: Number) -> Number:
    if abs(exponent) > MAX_EXPONENT:
        raise ToolFailed(f"exponent larger than {MAX_EXPONENT}")
    # estimate before computing: a huge integer power is refused, not built
    whole = isinstance(base, int) and isinstance(exponent, int)
    big = whole and abs(base) > 1 and exponent > 0
    if big and exponent * math.log10(abs(base)) >= MAX_INT_DIGITS:
        raise ToolFailed(f"result has more than {MAX_INT_DIGITS} digits")
    result = base**exponent
    if isinstance(result, complex):
        raise ToolFailed("the result is not a real number")
    return result


def _evaluate(node: ast.AST) -> Number:
    if isinstance(node, ast.Expression):
        return _evaluate(node.body)
    if isinstance(node, ast.Constant) and isinstance(node.value, int | float):
        return _checked(node.value)
    if isinstance(node, ast.BinOp):
        left, right = _evaluate(node.left), _evaluate(node.right)
        if isinstance(node.op, ast.Pow):
            return _checked(_power(left, right))
        binary = _BINARY.get(type(node.op))
        if binary is None:
            raise ToolFailed(f"operator {type(node.op).__name__} is not allowed")
        return _checked(binary(left, right))
    if isinstance(node, ast.UnaryOp):
        unary = _UNARY.get(type(node.op))
        if unary is None:
            raise ToolFailed(f"operator {type(node.op).__name__} is not allowed")
        return _checked(unary(_evaluate(node.operand)))
    if isinstance(node, ast.Name) and node.id in _CONSTANTS:
        return _CONSTANTS[node.id]
    if (
        isinstance(node, ast.Call)
        and isinstance(node.func, ast.Name)
        and node.func.id in _FUNCTIONS
        and not node.keywords
    ):
        args = [_evaluate(a) for a in node.args]
        return _checked(_FUNCTIONS[node.func.id](*args))
    raise ToolFailed(f"{type(node).__name__} is not allowed in an expression")


def calculate(expression: str) -> Number:
    """Evaluate ``expression`` safely. An expression that is refused, out of bounds or has no
    answer (division by zero, a math domain error, a wrong function call) raises
    :class:`ToolFailed` saying which, so the model can correct it."""
    if len(expression) > MAX_EXPRESSION_CHARS:
        raise ToolFailed(f"expression longer than {MAX_EXPRESSION_CHARS} characters")
    try:
        tree = ast.parse(expression.strip(), mode="eval")
    except SyntaxError as exc:
        raise ToolFailed(f"not an arithmetic expression ({exc.msg})") from None
    except ValueError as exc:  # a NUL character in the source
        raise ToolFailed(f"not an arithmetic expression ({exc})") from None
    if sum(1 for _ in ast.walk(tree)) > MAX_NODES:
        raise ToolFailed("expression too complex")
    try:
        return _evaluate(tree)
    except ZeroDivisionError:
        raise ToolFailed("division by zero") from None
    except OverflowError:
        raise ToolFailed(OUT_OF_RANGE) from None
    except ValueError as exc:
        raise ToolFailed(f"no real answer ({exc})") from None
    except TypeError as exc:
        raise ToolFailed(f"wrong function arguments ({exc})") from None


def format_number(value: Number) -> str:
    if isinstance(value, float) and value.is_integer() and abs(value) < 1e15:
        return str(int(value))
    return repr(value)


def calculator_tool() -> ToolSpec:
    """The ``calculator`` tool."""

    async def handler(arguments: Mapping[str, object], context: ToolContext) -> ToolResult:
        args = parse_arguments(CalculatorArguments, arguments)
        return format_number(calculate(args.expression))

    return ToolSpec(
        name="calculator",
        description="Evaluate an arithmetic expression exactly (no code execution): numbers, "
        "+ - * / // % **, parentheses, pi, e, sqrt, log, sin, cos, tan, floor, ceil, "
        "round, min, max, abs.",
        parameters=schema_of(CalculatorArguments),
        handler=handler,
        requires_approval=False,
        kind=ToolKind.READ_ONLY,
        concurrency_safe=True,
        dedup_exempt=True,
    )
