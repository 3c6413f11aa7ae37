"""The real control point of Tests/UPnPDeviceTests/AsyncUPnPClientPeerTests.swift: async-upnp-client.

Usage: upnp_peer.py SSDP_PORT. Finds the Presence:1 device by an M-SEARCH sent unicast to
127.0.0.1:SSDP_PORT: the test's device listens there on a free port without joining the multicast
group (lo has no MULTICAST flag in the test machines, and a multicast search goes to port 1900,
which a test cannot count on having). Then it reads the description with async-upnp-client's
UpnpFactory, calls every action, subscribes to the events with AiohttpNotifyServer, and prints one
JSON object with what it saw. The client's own log of its notify server goes to stderr, so that
a failed run shows which NOTIFYs arrived and how they were answered.
"""

import asyncio
import json
import logging
import sys

from async_upnp_client.aiohttp import AiohttpNotifyServer, AiohttpRequester
from async_upnp_client.client_factory import UpnpFactory
from async_upnp_client.exceptions import UpnpActionResponseError, UpnpError
from async_upnp_client.search import async_search

DEVICE_TYPE = "urn:schemas-upnp-org:device:TelephonyServer:2"
SERVICE_TYPE = "urn:schemas-upnp-org:service:Presence:1"


async def search(ssdp_port):
    # The answers to one search; searched again (10 times at most) while the device, whose
    # run() a loaded machine may start late, answers none.
    for _ in range(10):
        found = []

        async def on_response(headers):
            found.append({key: headers.get(key) for key in ("ST", "USN", "LOCATION", "CACHE-CONTROL", "SERVER", "EXT")})

        await async_search(on_response, timeout=1, search_target="ssdp:all", source=("127.0.0.1", 0),
                           target=("127.0.0.1", ssdp_port))
        if found:
            return found
    return found


async def call(service, name, **arguments):
    try:
        return {"ok": dict(await service.action(name).async_call(**arguments))}
    except UpnpActionResponseError as error:
        return {"fault": error.error_code, "status": error.status}
    except UpnpError as error:
        return {"error": repr(error)}


async def wait_for(events, count, seconds=20.0):
    for _ in range(int(seconds * 20)):
        if len(events) >= count:
            return
        await asyncio.sleep(0.05)


async def main(ssdp_port):
    out = {"search": await search(ssdp_port)}
    location = next(r["LOCATION"] for r in out["search"] if r["ST"] == DEVICE_TYPE)
    requester = AiohttpRequester()
    device = await UpnpFactory(requester).async_create_device(location)
    service = device.service(SERVICE_TYPE)
    out["device"] = {"type": device.device_type, "udn": device.udn, "services": list(device.services)}
    out["actions"] = sorted(service.actions)
    out["evented"] = sorted(v.name for v in service.state_variables.values() if v.send_events)
    results = {
        "GetPresence": await call(service, "GetPresence"),
        "UpdatePresence": await call(service, "UpdatePresence", UpdatedUserPresence="<presence status='open'/>"),
        "GetContactPresence": await call(service, "GetContactPresence", TargetContact="sip:bob@example.com"),
        "GetPresenceOfContactsUpdate": await call(service, "GetPresenceOfContactsUpdate"),
        "RegisterForContactPresence": await call(service, "RegisterForContactPresence",
                                                 Contact="sip:bob@example.com", Expire=3600),
        "AuthorizePresenceReactive": await call(service, "AuthorizePresenceReactive", Contact="sip:carol@example.com",
                                                Expire=3600, UserPresenceInfo="<presence/>"),
        "AuthorizePresenceProactive": await call(service, "AuthorizePresenceProactive", UserPresenceInfo="<presence/>",
                                                 Expire=60, WatcherList="<watchers/>"),
        "UpdatePresenceNotXML": await call(service, "UpdatePresence", UpdatedUserPresence="<presence"),
    }
    out["results"] = results
    events = []
    service.on_event = lambda _, variables: events.append({v.name: v.value for v in variables})
    server = AiohttpNotifyServer(requester, source=("127.0.0.1", 0))
    await server.async_start_server()
    sid, timeout = await server.event_handler.async_subscribe(service)
    out["subscription"] = {"sid": sid, "timeout": int(timeout.total_seconds())}
    await wait_for(events, 1)
    await call(service, "UpdatePresence", UpdatedUserPresence="<presence status='away'/>")
    await wait_for(events, 2)
    out["events"] = events
    await server.async_stop_server()
    await requester.async_close() if hasattr(requester, "async_close") else None
    print(json.dumps(out))


if __name__ == "__main__":
    logging.basicConfig(stream=sys.stderr, level=logging.WARNING, format="%(asctime)s %(name)s %(message)s")
    for name in ("async_upnp_client.aiohttp", "async_upnp_client.event_handler"):
        logging.getLogger(name).setLevel(logging.DEBUG)
    asyncio.run(main(int(sys.argv[1])))
