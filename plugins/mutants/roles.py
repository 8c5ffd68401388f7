"""Seeded bugs in role checks and allocation validation (DOM-ROLE, DOM-ALLOC)."""

from __future__ import annotations

from harness.api.hal import DriverError, ErrorStatus, ExecutionResult, Request
from harness.api.memory import Memory
from reference_driver.buffers import TokenTable
from reference_driver.device import ReferencePreparedModel
from reference_driver.validation import OK

from ._registry import mutant, with_rule

INVALID = ErrorStatus.INVALID_ARGUMENT


def _roles_matching(match):
    def role_allowed(roles, prepared_model, direction, io_index):
        return OK if any(match(r, prepared_model, direction, io_index) for r in roles) else INVALID
    return role_allowed


@mutant("role-io-index-unchecked", "DOM-ROLE-2", "accepts a buffer at any ioIndex of the right model and direction")
def role_io_index_unchecked():
    return with_rule("role_allowed", _roles_matching(lambda r, p, d, i: r.prepared_model is p and r.direction == d))


@mutant("role-direction-unchecked", "DOM-ROLE-2", "accepts an input-only buffer as an output and vice versa")
def role_direction_unchecked():
    return with_rule("role_allowed", _roles_matching(lambda r, p, d, i: r.prepared_model is p and r.io_index == i))


@mutant("role-other-model-accepted", "DOM-ROLE-2", "accepts a buffer allocated for another prepared model")
def role_other_model_accepted():
    return with_rule("role_allowed", _roles_matching(lambda r, p, d, i: r.direction == d and r.io_index == i))


@mutant("duplicate-model-not-duplicate", "DOM-ALLOC-1",
        "keys roles by model index, so the same prepared model listed twice gives two 'different' roles")
def duplicate_model_not_duplicate():
    return with_rule("role_key", lambda model_index, prepared, direction, io_index: (model_index, direction, io_index))


@mutant("role-index-negative-wraps", "DOM-ALLOC-1",
        "checks a role's modelIndex and ioIndex only against the count, so -1 names the last model or operand "
        "(a Python list index)")
def role_index_negative_wraps():
    return with_rule("index_in_range", lambda index, count: OK if index < count else INVALID)


@mutant("descriptor-sign-unchecked", "DOM-ALLOC-2",
        "combines a descriptor's extents with the roles' without checking their signs: -1 on an axis the roles "
        "leave unknown is taken as the buffer's extent")
def descriptor_sign_unchecked():
    return with_rule("descriptor_dimensions_valid", lambda dimensions: OK)


class _ZeroMeansLatest(TokenTable):
    def get(self, token):
        if token == 0:  # an uninitialized token field read as "the buffer just allocated"
            live = self.live_tokens()
            return super().get(live[-1]) if live else None
        return super().get(token)


@mutant("token-zero-accepted", "DOM-ROLE-1", "treats token 0 as the most recently allocated buffer")
def token_zero_accepted():
    return with_rule("token_positive", lambda token: OK if token >= 0 else INVALID, tokens=_ZeroMeansLatest())


class _ForgetfulRelease(TokenTable):
    def remove(self, token):
        pass  # the buffer stays in the table: its token keeps working after release


@mutant("released-token-usable", "DOM-ROLE-1", "release() frees nothing; the token keeps naming the buffer")
def released_token_usable():
    from reference_driver import ReferenceDevice

    return ReferenceDevice(tokens=_ForgetfulRelease())


class _FirstInsertLost(TokenTable):
    """A table made on first use, whose making drops the insert that asked for it."""

    def __init__(self) -> None:
        super().__init__()
        self._made = False

    def add(self, make):
        if self._made:
            return super().add(make)
        with self._lock:
            self._made = True
            return make(self.new_token(self._live.keys()))  # handed out, never entered


@mutant("first-buffer-never-entered", "DOM-ROLE-1", "the first buffer allocated after start-up is never entered in "
        "its token table (the table is made on first use and drops that insert): the buffer copies as any "
        "other, but a request naming its token fails with INVALID_ARGUMENT as if it were not live")
def first_buffer_never_entered():
    from reference_driver import ReferenceDevice

    return ReferenceDevice(tokens=_FirstInsertLost())


@mutant("output-token-reused", "DOM-ROLE-3", "allows a token used as an output to appear again in the same request")
def output_token_reused():
    return with_rule("token_output_exclusive", lambda uses: OK)


class _OutputExclusivePerSlot(ReferencePreparedModel):
    """Checks DOM-ROLE-3 per pool slot instead of per buffer (as the native sample did, keyed by
    pool index), then executes as the reference with that rule off: one token listed in two
    slots may be an output and another argument at once."""

    def execute(self, request: Request) -> ExecutionResult:
        uses: dict[int, list[str]] = {}
        for direction, arguments in (("input", request.inputs), ("output", request.outputs)):
            for argument in arguments:
                slot = argument.location.pool_index
                if not argument.has_no_value and 0 <= slot < len(request.pools) and not isinstance(request.pools[slot], Memory):
                    uses.setdefault(slot, []).append(direction)
        if any("output" in directions and len(directions) > 1 for directions in uses.values()):
            raise DriverError(INVALID, "[DOM-ROLE-3] a pool slot used as an output is used again", rule="DOM-ROLE-3")
        return super().execute(request)


@mutant("output-token-per-pool-slot", "DOM-ROLE-3",
        "checks that an output buffer is used once per pool slot, not per token: the same token in two slots passes")
def output_token_per_pool_slot():
    return with_rule("token_output_exclusive", lambda uses: OK, prepared_model_class=_OutputExclusivePerSlot)


@mutant("token-location-ignored", "DOM-ROLE-4", "ignores offset, length and padding given with a token pool")
def token_location_ignored():
    return with_rule("token_location_zero", lambda argument: OK)


@mutant("probability-unchecked", "DOM-ALLOC-1", "accepts any role probability (0, negative, above 1)")
def probability_unchecked():
    return with_rule("role_probability_in_range", lambda probability: OK)


@mutant("probability-nan-accepted", "DOM-ALLOC-1",
        "refuses a probability that is <= 0 or > 1, so NaN, which is neither, is accepted")
def probability_nan_accepted():
    return with_rule("role_probability_in_range", lambda probability: INVALID if probability <= 0.0 or probability > 1.0 else OK)


@mutant("scale-conflict-accepted", "DOM-ALLOC-2", "compares role operand types but not scale and zeroPoint")
def scale_conflict_accepted():
    return with_rule("role_operands_agree", lambda operands: OK if len({o.type for o in operands}) == 1 else INVALID)


def _conflict_as_unknown(lhs, rhs):
    if not lhs or not rhs:
        return tuple(lhs or rhs)
    if len(lhs) != len(rhs):
        return None
    return tuple(a if a == b else (a or b) if 0 in (a, b) else 0 for a, b in zip(lhs, rhs))


@mutant("conflict-as-unknown", "DOM-ALLOC-2", "combine_dimensions treats two different extents as an unknown one")
def conflict_as_unknown():
    def role_dimensions(operands, desc_dimensions):
        combined = tuple(desc_dimensions)
        for operand in operands:
            combined = _conflict_as_unknown(combined, operand.dimensions) if combined is not None else None
        return combined
    return with_rule("role_dimensions", role_dimensions)


@mutant("scalar-role-with-dimensions", "DOM-ALLOC-2", "accepts dimensions in the descriptor of a scalar role")
def scalar_role_with_dimensions():
    return with_rule("scalar_role_without_dimensions", lambda operand_type, dimensions: OK)


class _CountedTokens(TokenTable):
    def new_token(self, live):
        return len(live) + 1  # "one more than the buffers in use": once an older one is released, a live token comes again


@mutant("token-count-reissued", "DOM-ALLOC-3",
        "numbers each new buffer one more than the live buffers, so after a release it can take a live buffer's token")
def token_count_reissued():
    from reference_driver import ReferenceDevice

    return ReferenceDevice(tokens=_CountedTokens())
