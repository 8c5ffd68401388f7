"""Out-of-tree drivers the acceptance tests write next to a run (``--driver=FILE.py:factory``)."""

from __future__ import annotations

import textwrap

LEAKS_AFTER_FOUR = textwrap.dedent(
    '''
    from harness.api.hal import DriverError, ErrorStatus
    from reference_driver import ReferenceDevice


    class LeaksAfterFour(ReferenceDevice):
        """Validates each allocation first (an invalid one is refused as SPEC says), but serves
        only four valid ones in its life: releasing never frees what a buffer held."""

        served = 0

        def allocate(self, desc, prepared_models, input_roles, output_roles):
            buffer, token = super().allocate(desc, prepared_models, input_roles, output_roles)
            if self.served >= 4:
                buffer.release()
                raise DriverError(ErrorStatus.GENERAL_FAILURE, "out of device memory")
            self.served += 1
            return buffer, token


    def factory():
        return LeaksAfterFour()
    '''
)

HOLDS_TWO = textwrap.dedent(
    '''
    from harness.api.hal import DriverError, ErrorStatus
    from reference_driver import ReferenceDevice


    class HoldsTwo(ReferenceDevice):
        """A correct driver with room for two live buffers: a third is refused with GENERAL_FAILURE
        (a memory limit, DOM-ALLOC-3), and a release gives its room back."""

        def allocate(self, desc, prepared_models, input_roles, output_roles):
            buffer, token = super().allocate(desc, prepared_models, input_roles, output_roles)
            if len(self.tokens) > 2:
                buffer.release()
                raise DriverError(ErrorStatus.GENERAL_FAILURE, "room for two buffers")
            return buffer, token


    def factory():
        return HoldsTwo()
    '''
)
