#!/bin/sh
# topoprobe 0.1.0: the measurements of measured on this machine for hwloc-annotate.
# Measured on host vm.
# Usage: lstopo-no-graphics --of xml > machine.xml   (on the measured machine)
#        sh THIS-SCRIPT machine.xml annotated.xml   (the output may be the input)
#        lstopo-no-graphics --input annotated.xml --distances   (or --memattrs)
# Adds the distances `topoprobe-latency-ps` between the 16 PUs (kind 6: from the user, means latency).
# Adds the memory attributes Latency, ReadLatency, Bandwidth, ReadBandwidth, WriteBandwidth (ns; MiB/s) from each socket's CPUs to each node.
set -eu
if [ "$#" -ne 2 ]; then
  echo "usage: sh $0 IN.xml OUT.xml  (IN.xml: lstopo-no-graphics --of xml of the measured machine)" >&2
  exit 2
fi
command -v hwloc-annotate >/dev/null 2>&1 || { echo "topoprobe: hwloc-annotate not found: install hwloc" >&2; exit 1; }
in=$1
out=$2
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
cp -- "$in" "$tmp/work.xml"
lstopo-no-graphics --input "$in" --only pu >"$tmp/pu"
lstopo-no-graphics --input "$in" --only numanode >"$tmp/numanode"
# location TYPE OS: hwloc's location (TYPE:LOGICAL) of the object with OS number OS.
location() {
  awk -v type="$1" -v os="$2" '
    match($0, /L#[0-9]+/) {
      l = substr($0, RSTART + 2, RLENGTH - 2)
      if (match($0, /P#[0-9]+/) && substr($0, RSTART + 2, RLENGTH - 2) == os) {
        print type ":" l; found = 1; exit
      }
    }
    END {
      if (!found) {
        print "topoprobe: " type " P#" os " is not in the input file: is it of the measured machine?" > "/dev/stderr"
        exit 1
      }
    }' "$tmp/$1"
}
# annotate ARGS: hwloc-annotate on the copy; any message it prints is a failure.
annotate() {
  if ! hwloc-annotate "$tmp/work.xml" "$tmp/work.xml" "$@" 2>"$tmp/err" || [ -s "$tmp/err" ]; then
    cat "$tmp/err" >&2
    echo "topoprobe: hwloc-annotate $* failed" >&2
    exit 1
  fi
}
{
  echo 'name=topoprobe-latency-ps'
  echo 6
  echo 16
  for cpu in \
    0 1 2 3 4 5 6 7 8 9 10 11 12 13 14 15; do
    location pu "$cpu"
  done
  cat <<'VALUES'
0
99376
96025
81652
86793
91873
83818
102980
98924
95602
96145
100380
91180
87441
83140
84925
99376
0
97109
81612
75367
79769
114757
88722
115636
86797
116276
115001
96835
102614
109411
114928
96025
97109
0
88606
100231
96025
93871
79927
94378
109637
96613
95537
99371
78446
81779
94806
81652
81612
88606
0
92091
104522
83540
94776
114258
122766
113929
115777
89779
97124
93025
82953
86793
75367
100231
92091
0
104219
103788
126152
91303
113064
106791
112977
115742
123672
111276
108369
91873
79769
96025
104522
104219
0
90543
86197
136586
77593
81336
134282
91180
71313
71374
84925
83818
114757
93871
83540
103788
90543
0
126118
91455
123635
84931
111844
96812
104230
113438
84983
102980
88722
79927
94776
126152
86197
126118
0
118584
95922
109581
119158
96964
118327
103121
114816
98924
115636
94378
114258
91303
136586
91455
118584
0
96383
90411
106610
88436
87613
116916
78171
95602
86797
109637
122766
113064
77593
123635
95922
96383
0
113700
91763
86464
114314
89183
102110
96145
116276
96613
113929
106791
81336
84931
109581
90411
113700
0
92230
77376
96875
81212
102308
100380
115001
95537
115777
112977
134282
111844
119158
106610
91763
92230
0
105692
101143
88319
83749
91180
96835
99371
89779
115742
91180
96812
96964
88436
86464
77376
105692
0
118736
101423
97535
87441
102614
78446
97124
123672
71313
104230
118327
87613
114314
96875
101143
118736
0
118488
99565
83140
109411
81779
93025
111276
71374
113438
103121
116916
89183
81212
88319
101423
118488
0
114802
84925
114928
94806
82953
108369
84925
84983
114816
78171
102110
102308
83749
97535
99565
114802
0
VALUES
} >"$tmp/distances"
annotate -- root -- distances "$tmp/distances"
node0=$(location numanode 0)
annotate -- "$node0" -- memattr Latency 0x0000ffff 141
annotate -- "$node0" -- memattr ReadLatency 0x0000ffff 141
annotate -- "$node0" -- memattr Bandwidth 0x0000ffff 13159
annotate -- "$node0" -- memattr ReadBandwidth 0x0000ffff 13159
annotate -- "$node0" -- memattr WriteBandwidth 0x0000ffff 17990
cp -- "$tmp/work.xml" "$out"
