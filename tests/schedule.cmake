# How ctest schedules the suite (included by the root CMakeLists.txt after
# every test is registered). `make test` runs ctest with twice as many jobs
# as cores (CTEST_JOBS), because most integration tests spend their time
# waiting (sleeps, rates, Retry-After, timeouts) rather than computing; this
# table keeps that from costing the tests that compute or that measure time.
#
# One row per test: NAME COST GROUP.
#  - COST: seconds on a quiet 2-core machine, roughly. ctest starts the
#    costliest first, so that -j is not left with one long test at the end;
#    a clean clone has no timing history (Testing/Temporary/CTestCostData.txt)
#    and would otherwise start them in the order they were registered.
#  - GROUP timing: asserts on real time and has failed under load before
#    (a learned rate's wall time, a proxy's pacing, Redis round trips).
#    Takes 3 of the 4 slots, so that it runs beside one other test at most,
#    as at ctest -j2, and never beside a heavy one. (With 2 slots, beside
#    three others on a shared machine, test_run_learned_rate_shared's
#    headers row took 1.5 x its floor against its 1.4 x bound.) Their costs
#    are above every other (100 + seconds): ctest starts a test only when
#    its slots are free, so a 3-slot test listed among the others would
#    wait until the others ran out; first, they follow one another.
#  - GROUP alone: a timing test that failed even beside one light test on
#    a shared machine (test_run_learned_rate_shared's headers row: 11 x
#    429 and 1.7 x its floor beside test_run_express_rate_limit, in a
#    clean-clone make test): RUN_SERIAL, started first.
#  - GROUP heavy: uses a core for much of its run (chromium, many short
#    polite processes, python renderers). Never runs beside a timing or a
#    paced test, nor beside another heavy one (they share those locks); its
#    cost is raised (30 + seconds), so that the heavy ones start right after
#    the timing ones. One slot: with two, lights refilling every freed slot
#    left them all for the end, one after another (85 s of tail, quiet).
#  - GROUP paced: asserts on real time with more margin: one slot, never
#    beside a heavy test.
#  - GROUP -: mostly waits.
# The costs were last taken from each test's wall time at ctest -j2 beside
# one other test (the timing and paced ones from a clean-clone ctest -j4);
# the CPU share (user + sys over wall, /usr/bin/time) of the heavy ones:
# test_cli_delay_plan 82% (10 s alone, 54 s at -j4 among lights: one
# python3 per check), test_report_size 72%, test_run_budget_file_damage
# 71% (its side-by-side cases write random bytes), sim/report 60%,
# test_run_curl_opts 54%, test_gateway_go 50% (with a warm Go cache);
# test_cli_docs, test_gateway_node, test_cli_cases and test_report_browser
# 29-33% of what /usr/bin/time sees (chromium's and npm's children not all
# counted), kept heavy. A light one that took longer than ~10 s at -j4
# has a row (test_gateway_basic: 12 s). test_budget_file is paced: its
# two-process window (budget/run_e2e.sh) failed beside test_report_browser.
# A test not listed keeps ctest's defaults (cost 0: it starts after the
# listed ones). A row for a test that does not exist is an error, so that
# the table follows renames.
set(POLITE_TEST_SCHEDULE
  integration/test_run_learned_rate_shared 137 alone
  integration/test_budget_redis 132 timing
  integration/test_client_learned_rate 126 timing
  integration/test_proxy_modes 123 timing
  integration/test_report_browser 56 heavy
  integration/test_cli_docs 56 heavy
  integration/test_report_size 51 heavy
  integration/test_cli_cases 48 heavy
  integration/test_cli_delay_plan 40 heavy
  integration/test_gateway_node 40 heavy
  integration/test_run_budget_file_damage 38 heavy
  integration/test_gateway_go 35 heavy
  integration/test_run_curl_opts 35 heavy
  sim/report 34 heavy
  integration/test_run_resume 41 -
  integration/test_run_express_rate_limit 36 -
  integration/test_run_basic 23 -
  integration/test_run_nginx 22 -
  integration/test_run_budget_outage 21 -
  integration/test_run_learned_rate_hosts 21 paced
  integration/test_run_learned_rate 21 paced
  integration/test_budget_file 19 paced
  integration/test_gateway_requests 18 -
  integration/test_proxy_judge 18 -
  integration/test_proxy_https 16 -
  integration/test_report_proxy 15 -
  integration/test_client_learned_rate_shared 14 paced
  integration/test_queue_redis_restart 14 -
  integration/test_queue_retry_after 14 -
  integration/test_gateway_policy 14 -
  integration/test_report_run 12 -
  integration/test_gateway_basic 12 -
  integration/test_run_cost 11 -
  integration/test_run_interrupt_resume 11 -
  integration/test_queue_cluster 11 paced
  integration/test_gateway_redis 10 -
  integration/test_client_budget_outage 10 -
  integration/test_gateway_connect_plain 10 -
  integration/test_queue_fleet 7 -
  integration/test_run_client 4 paced
  integration/test_gateway_evict 4 paced
)

# Walks the table: the cost, and for the groups their slots and locks. A
# heavy test holds the lock of every timing and paced test, so that neither
# runs beside the other; a timing or paced test holds its own.
function(polite_schedule_tests)
  set(rows ${POLITE_TEST_SCHEDULE})
  list(LENGTH rows n)
  math(EXPR last "${n} - 3")
  set(locks)
  foreach(i RANGE 0 ${last} 3)
    math(EXPR g "${i} + 2")
    list(GET rows ${i} name)
    list(GET rows ${g} group)
    if(group STREQUAL "timing" OR group STREQUAL "paced")
      list(APPEND locks "lock:${name}")
    endif()
  endforeach()
  foreach(i RANGE 0 ${last} 3)
    math(EXPR c "${i} + 1")
    math(EXPR g "${i} + 2")
    list(GET rows ${i} name)
    list(GET rows ${c} cost)
    list(GET rows ${g} group)
    if(NOT TEST ${name})
      message(FATAL_ERROR "tests/schedule.cmake: no test named ${name}")
    endif()
    set_tests_properties(${name} PROPERTIES COST ${cost})
    if(group STREQUAL "heavy")
      set_tests_properties(${name} PROPERTIES RESOURCE_LOCK "${locks}")
    elseif(group STREQUAL "timing")
      set_tests_properties(${name} PROPERTIES PROCESSORS 3
        RESOURCE_LOCK "lock:${name}")
    elseif(group STREQUAL "alone")
      set_tests_properties(${name} PROPERTIES RUN_SERIAL TRUE)
    elseif(group STREQUAL "paced")
      set_tests_properties(${name} PROPERTIES RESOURCE_LOCK "lock:${name}")
    elseif(NOT group STREQUAL "-")
      message(FATAL_ERROR "tests/schedule.cmake: ${name}: group '${group}' "
        "is not alone, timing, heavy, paced or -")
    endif()
  endforeach()
endfunction()

# The sanitizer build runs only the labels unit and asan (make test, at
# the cores' jobs), all of which compute: there the groups mean nothing, and
# the simulation's report, by far the longest under ASan+UBSan, starts
# first.
if(POLITE_SANITIZE)
  set_tests_properties(sim/report PROPERTIES COST 45)
  set_tests_properties(sim/zoo integration/test_proxy_abort
    integration/test_gateway_abort PROPERTIES COST 7)
else()
  polite_schedule_tests()
endif()
