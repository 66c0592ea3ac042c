-- wrk script for bench/proxy/urls.sh: every request goes to a URL never seen before (the thread's
-- number and a counter in the path and the query).
local counter = 0
local id = 0
local next_id = 0

function setup(thread)
  next_id = next_id + 1
  thread:set("id", next_id)
end

function init(args)
  id = wrk.thread:get("id")
end

function request()
  counter = counter + 1
  return wrk.format("GET", "/u/" .. id .. "/" .. counter .. "?q=" .. counter)
end
