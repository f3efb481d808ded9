mkdir -p out && tar -xzf bundle.tar.gz -C out && sha256sum bundle.tar.gz | cut -d' ' -f1 > hash.txt
