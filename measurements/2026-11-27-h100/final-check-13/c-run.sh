# call c (carries the third part of the peers' wheels)
cp .whl/p3/* ~/peers/ && ls ~/peers
