# bench/lib/spank_parts.py TREE LOG: a timer around each call of
# init_post_opt and exit (spank/ib_remote.c) and of the watcher's start
# (spank/ib_watch.c) in the copy TREE, each call's time appended to LOG as
# "LABEL NS".  Used by bench_spank_parts.sh; a source line it expects and
# does not find stops it (assert), so a change of those calls is seen.
import sys, re
root, log = sys.argv[1], sys.argv[2]
hdr = r'''
#include <time.h>
#include <fcntl.h>
#include <unistd.h>
static long long tm_now(void){struct timespec ts;clock_gettime(CLOCK_MONOTONIC,&ts);return (long long)ts.tv_sec*1000000000LL+ts.tv_nsec;}
static void tm_log(const char *what,long long t0){char b[200];long long d=tm_now()-t0;int fd=open("%s",O_WRONLY|O_APPEND|O_CREAT|O_CLOEXEC,0666),n;if(fd<0)return;n=snprintf(b,sizeof(b),"%%s %%lld\n",what,d);if(write(fd,b,(size_t)n)<0)n=0;close(fd);}
#define TM(label, stmt) do { long long tm_t0 = tm_now(); stmt; tm_log(label, tm_t0); } while (0)
''' % log
def patch(path, reps):
    s = open(root + '/' + path).read()
    s = s.replace('#include "spank_ib.h"\n', '#include "spank_ib.h"\n' + hdr, 1)
    for a, b in reps:
        assert a in s, (path, a)
        s = s.replace(a, b, 1)
    open(root + '/' + path, 'w').write(s)
patch('spank/ib_remote.c', [
 ('\t\tifname_lookup_start(sp, st, n, &je, cache_dir);', '\t\tTM("lookup_start", ifname_lookup_start(sp, st, n, &je, cache_dir));'),
 ('\t\tspank_ib_load_health(st, n, &je, root, cache_dir);', '\t\tTM("load_health", spank_ib_load_health(st, n, &je, root, cache_dir));'),
 ('\t\t\tspank_ib_lw_start(sp, st, root, n->in_link_counters ? &n->in.inv : NULL,\n\t\t\t\t\t  n->job_id, n->step_id);', '\t\t\tTM("lw_start", spank_ib_lw_start(sp, st, root, n->in_link_counters ? &n->in.inv : NULL,\n\t\t\t\t\t  n->job_id, n->step_id));'),
 ('\t\t\tfind_ifname(st, n, &je);\n\t\t\tifname_lookup_keep(st, n, cache_dir);', '\t\t\tTM("find_ifname", find_ifname(st, n, &je);\n\t\t\tifname_lookup_keep(st, n, cache_dir));'),
 ('\t\t\tload_placement(st, n, sp, topo, cache_dir);', '\t\t\tTM("load_placement", load_placement(st, n, sp, topo, cache_dir));'),
 ('\tspank_ib_judge(st, n);\n', '\tTM("judge", spank_ib_judge(st, n));\n'),
 ('\t\tspank_ib_watch_start(sp, st, n, root); /*', '\t\tTM("watch_start", spank_ib_watch_start(sp, st, n, root)); /*'),
 ('\tn->work_ms = now_ms() - t0;', '\tn->work_ms = now_ms() - t0;\n\ttm_log("post_opt_total", (long long)(t0 * 1e6));'),
 ('\t\tint fd = ibp_rootpath_open(topo_path, O_RDONLY, 0, why, sizeof(why));', '\t\tint fd; TM("topo_rootpath", fd = ibp_rootpath_open(topo_path, O_RDONLY, 0, why, sizeof(why)));'),
 ('\t\trc = fd < 0 ? fd : load_file_topology(st, n, fd, topo_path, cache_dir);', '\t\tTM("topo_file", rc = fd < 0 ? fd : load_file_topology(st, n, fd, topo_path, cache_dir));'),
 ('\t\trc = load_live_topology(st, n, cache_dir);', '\t\tTM("topo_live", rc = load_live_topology(st, n, cache_dir));'),
 ('\trc = ibp_topo_apply_inventory(&n->topo, &n->in.inv, &n->findings, ibp_health_port_severity);', '\tTM("apply_inv", rc = ibp_topo_apply_inventory(&n->topo, &n->in.inv, &n->findings, ibp_health_port_severity));'),
 ('\trc = ibp_place_compute(&n->pl, &n->topo, &step, &n->findings);', '\tTM("place_compute", rc = ibp_place_compute(&n->pl, &n->topo, &step, &n->findings));'),
 ('\t\t\tibp_env_build(&env, &n->topo, &n->pl, &view, &st->conf.policy, &eo,\n\t\t\t\t      spank_ib_env_get, sp, &n->findings);', '\t\t\tTM("env_build", ibp_env_build(&env, &n->topo, &n->pl, &view, &st->conf.policy, &eo,\n\t\t\t\t      spank_ib_env_get, sp, &n->findings));'),
 ('\tif (check_root_only_dir(st, n, "sysfs_root", root))\n\t\treturn;', '\tint crd; TM("sysfs_rootpath", crd = check_root_only_dir(st, n, "sysfs_root", root));\n\tif (crd)\n\t\treturn;'),
 ('\tspank_ib_watch_stop(st);\n\tif (st->active)\n\t\tspank_ib_lw_end(sp, st);\n\tspank_ib_lw_free(st);\n\tspank_ib_write_results(st, st->node);\n\tspank_ib_node_free(st->node);',
  '\tTM("watch_stop", spank_ib_watch_stop(st));\n\tif (st->active)\n\t\tTM("lw_end", spank_ib_lw_end(sp, st));\n\tspank_ib_lw_free(st);\n\tTM("results", spank_ib_write_results(st, st->node));\n\tTM("node_free", spank_ib_node_free(st->node));'),
 ('\t\tcfd = spank_ib_cache_open(cache_dir, geteuid() == 0, why, sizeof(why));\n\t\tif (cfd < 0)\n\t\t\tspank_ib_setup_finding(n, IBP_SEV_WARN,\n\t\t\t\t\t       "not caching verdicts', '\t\tTM("verdict_cache_open", cfd = spank_ib_cache_open(cache_dir, geteuid() == 0, why, sizeof(why)));\n\t\tif (cfd < 0)\n\t\t\tspank_ib_setup_finding(n, IBP_SEV_WARN,\n\t\t\t\t\t       "not caching verdicts'),
 ('\tif (cfd >= 0 && !spank_ib_cache_load(cfd, &key, st->conf.cache_ttl, &n->findings)) {', '\tint cl = 1; TM("verdict_load", cl = cfd >= 0 ? spank_ib_cache_load(cfd, &key, st->conf.cache_ttl, &n->findings) : 1);\n\tif (!cl) {'),
 ('\t\t\trc = ibp_inventory_load_opts(&n->in.inv, &fs, flags, &scratch);', '\t\t\tTM("inventory", rc = ibp_inventory_load_opts(&n->in.inv, &fs, flags, &scratch));'),
 ('\t\t\trc = ibp_health_check_job(&n->in, &st->conf.policy, &n->findings);', '\t\t\tTM("check_job", rc = ibp_health_check_job(&n->in, &st->conf.policy, &n->findings));'),
 ('\tint cfd = spank_ib_cache_open(cache_dir, geteuid() == 0, why, sizeof(why)), rc;\n', '\tint cfd, rc; TM("topo_cache_open", cfd = spank_ib_cache_open(cache_dir, geteuid() == 0, why, sizeof(why)));\n'),
 ('\trc = ibp_topo_load_file_cached(&n->topo, fd, cfd, st->host, geteuid() == 0, why,\n\t\t\t\t       sizeof(why));', '\tTM("topo_load_file_cached", rc = ibp_topo_load_file_cached(&n->topo, fd, cfd, st->host, geteuid() == 0, why,\n\t\t\t\t       sizeof(why)));'),
])
patch('spank/ib_watch.c', [
 ('\tif (spank_ib_helper_check("watcher", helper, err, sizeof(err))) {', '\tint hc; TM("w_helper_check", hc = spank_ib_helper_check("watcher", helper, err, sizeof(err)));\n\tif (hc) {'),
 ('\tif (spank_ib_node_name(st->host, node, sizeof(node)))', '\tint nn; TM("w_node_name", nn = spank_ib_node_name(st->host, node, sizeof(node)));\n\tif (nn)'),
 ('\tint life[2] = {-1, -1}, out[2] = {-1, -1}, rc = 0;', '\tint life[2] = {-1, -1}, out[2] = {-1, -1}, rc = 0;\n\tlong long tb = 0;'),
 ('\t\tbase = spank_ib_lw_before(st);', '\t\ttb = tm_now();\n\t\tbase = spank_ib_lw_before(st);'),
 ('\tif (rc)\n\t\tgoto fail;\n\tsnprintf(conf_env', '\tif (base) tm_log("w_baseline_text", tb);\n\tif (rc)\n\t\tgoto fail;\n\tsnprintf(conf_env'),
 ('\t\tpid = spank_ib_child_spawn(child_exec, &c);', '\t\tTM("w_spawn", pid = spank_ib_child_spawn(child_exec, &c));'),
])
