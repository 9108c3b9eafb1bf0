# calls i1, i2: the peers' wheels carried in parts into ~/peers (the 92 MB libs-cu13 wheel in three)
R=$OUT/i; mkdir -p $R ~/peers
cp .whl/p*/* ~/peers/; ls -la ~/peers > $R/i-peers.txt
cat $R/i-peers.txt
