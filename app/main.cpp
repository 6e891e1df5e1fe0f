// The ember desktop app (its start-up is app/shell/appmain.cpp, shared with tests' ember-testapp).
#include "appmain.h"

int main(int argc, char* argv[]) {
    return runEmber(argc, argv);
}
