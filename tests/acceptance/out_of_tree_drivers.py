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
