"""The serve-until-signal loop's handlers (``aeromq/_cli/serve.py``): a signal that lands
while an earlier one's handler is inside ``Event.set()`` must not wait for the event's lock,
which that handler holds in the same thread (a broker sent SIGTERM three times at once hung so
in a full run of ``tests/system/test_cluster_up.py``)."""

from __future__ import annotations

import signal
import threading

from aeromq._cli.serve import setting, stop_on_signals


def test_should_set_the_event_once_when_a_signal_lands_inside_the_first_handlers_set() -> None:
    stop = threading.Event()
    on_signal = setting(stop)
    set_event = stop.set
    calls = 0

    def set_with_a_signal_inside() -> None:
        nonlocal calls
        calls += 1
        if calls == 1:
            with stop._cond:  # type: ignore[attr-defined]  # Event.set holds it: a signal lands
                on_signal(signal.SIGTERM, None)
        set_event()

    stop.set = set_with_a_signal_inside  # type: ignore[method-assign]
    handler = threading.Thread(target=on_signal, args=(signal.SIGTERM, None), daemon=True)
    handler.start()
    handler.join(5)
    assert not handler.is_alive(), "the second signal's handler waited for the held lock"
    assert stop.is_set()
    assert calls == 1


def test_should_set_the_event_on_sigterm_and_restore_the_previous_handler() -> None:
    before = signal.getsignal(signal.SIGTERM)
    with stop_on_signals() as stop:
        signal.raise_signal(signal.SIGTERM)
        signal.raise_signal(signal.SIGTERM)
        assert stop.wait(5)
    assert signal.getsignal(signal.SIGTERM) is before
