"""nvmeof.Paths without a target: what it refuses before anything is sent."""
import pytest

import nvmeof


def test_unknown_iopolicy_is_refused_by_name():
    with pytest.raises(ValueError, match="round-robin"):
        nvmeof.Paths([], 1, iopolicy="rr")


def test_no_controllers_is_the_librarys_invalid_argument():
    with pytest.raises(nvmeof.InvalidArgumentError, match="1 to 16 paths"):
        nvmeof.Paths([], 1)
