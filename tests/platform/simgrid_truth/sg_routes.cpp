// Ground truth for smpy's platform tests: what SimGrid 3.32 computes for a platform file.
//
// Build (Debian package libsimgrid-dev):  g++ -std=c++17 -O1 sg_routes.cpp -o sg_routes -lsimgrid
// Run:                                    ./sg_routes platform.xml [MAX]
// Prints, one per line:
//   host <name> <cores> <speed of pstate 0 (flop/s)> <pstate count>
//   link <name> <bandwidth B/s> <latency s> <sharing policy>   (SimGrid's link list)
//   route <src> <dst> <link1,link2,...>                      ("-" for an empty route)
// Hosts are in SimGrid's order (sorted by name). Routes are printed for the host pairs
// (hosts[i*k], hosts[j*k]) with k = ceil(n / MAX) (MAX defaults to n: every pair).
// A host's route to itself in a zone with routing="None" is printed as "!" (SimGrid aborts).
#include <simgrid/kernel/routing/NetZoneImpl.hpp>
#include <simgrid/s4u.hpp>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <typeinfo>
#include <vector>

namespace sg4 = simgrid::s4u;

static const char* policy_name(sg4::Link::SharingPolicy p)
{
  switch (p) {
    case sg4::Link::SharingPolicy::SHARED:
      return "SHARED";
    case sg4::Link::SharingPolicy::FATPIPE:
      return "FATPIPE";
    case sg4::Link::SharingPolicy::SPLITDUPLEX:
      return "SPLITDUPLEX";
    case sg4::Link::SharingPolicy::WIFI:
      return "WIFI";
    default:
      return "OTHER";
  }
}

int main(int argc, char** argv)
{
  int fake_argc     = 1;
  char* fake_argv[] = {argv[0], nullptr};
  sg4::Engine e(&fake_argc, fake_argv);
  e.load_platform(argv[1]);
  e.seal_platform(); // Floyd/Dijkstra tables and loopbacks are built when sealing
  std::vector<sg4::Host*> hosts = e.get_all_hosts();
  size_t n      = hosts.size();
  size_t max    = argc > 2 ? std::strtoul(argv[2], nullptr, 10) : n;
  size_t stride = max > 0 && n > max ? (n + max - 1) / max : 1;
  for (auto const* h : hosts)
    std::printf("host %s %d %.17g %lu\n", h->get_cname(), h->get_core_count(), h->get_pstate_speed(0),
                h->get_pstate_count());
  for (auto const* l : e.get_all_links())
    std::printf("link %s %.17g %.17g %s\n", l->get_cname(), l->get_bandwidth(), l->get_latency(),
                policy_name(l->get_sharing_policy()));
  for (size_t i = 0; i < n; i += stride) {
    for (size_t j = 0; j < n; j += stride) {
      const sg4::Host* src = hosts[i];
      const sg4::Host* dst = hosts[j];
      const simgrid::kernel::routing::NetZoneImpl* zone = src->get_englobing_zone()->get_impl();
      if (src == dst && std::strstr(typeid(*zone).name(), "EmptyZone") != nullptr) {
        std::printf("route %s %s !\n", src->get_cname(), dst->get_cname());
        continue;
      }
      std::vector<sg4::Link*> links;
      double latency = 0;
      src->route_to(dst, links, &latency);
      std::string text;
      for (auto const* l : links) {
        if (not text.empty())
          text += ",";
        text += l->get_name();
      }
      std::printf("route %s %s %s\n", src->get_cname(), dst->get_cname(), text.empty() ? "-" : text.c_str());
    }
  }
  return 0;
}
