"""Whether a real mosquitto is here: tests that start one skip without it."""

from __future__ import annotations

import os
import shutil

import pytest

#: mosquitto and mosquitto_passwd (a private broker is password-protected)
HAVE_MOSQUITTO = shutil.which("mosquitto_passwd") is not None and (
    shutil.which("mosquitto") is not None or os.path.exists("/usr/sbin/mosquitto"))

needs_mosquitto = pytest.mark.skipif(not HAVE_MOSQUITTO, reason="mosquitto is not installed")
