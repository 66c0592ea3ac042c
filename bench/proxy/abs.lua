-- wrk script: send absolute-form request targets (as to a forward proxy).
-- TARGET is the destination origin, e.g. http://127.0.0.1:8080
local target = os.getenv("TARGET")
wrk.path = target .. "/"
wrk.headers["Host"] = target:gsub("^http://", "")
