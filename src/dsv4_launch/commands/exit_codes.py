"""Exit statuses of dsv4-launch itself. Once vLLM runs, the status is vLLM's own."""

OK = 0
DOCTOR_FAILED = 1  # doctor: something on this machine would stop DeepSeek-V4
USAGE = 2  # bad input: a --config file vLLM cannot read, a bad DSV4_LAUNCH_* value, a bad option
REFUSED = 2  # a pre-flight refusal: vLLM would fail later with these settings
CHECK_PROBLEM = 1  # check: the server answered, and something in its answers is wrong
NOT_REACHABLE = 3  # check: not reachable, not ready (503, still loading) or no answer within --timeout;
#                   distinct from 1 so that a probe or a CI smoke test can wait while it is 3
OUTPUT_FAILED = 74  # plan/doctor/fit could not write their report (sysexits EX_IOERR)
EXEC_FAILED = 126  # the `vllm` on PATH could not be executed
NO_VLLM = 127  # no vLLM to hand over to
INTERRUPTED = 130  # Ctrl-C before vLLM started
