# call k (carries the second part of the peers' wheels)
cp .whl/p2/* ~/peers/ && ls ~/peers
