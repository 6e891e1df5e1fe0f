pragma ComponentBehavior: Bound
import QtQuick
import Ember

// A message's Markdown blocks (`blocks`, parsed in C++: one row per block, so that a streamed
// batch changes only the last), placed below each other `spacing` apart.
//
// Blocks scrolled out of the list's view leave the scene graph (visible: false), so that a frame
// walks only the blocks in view and costs the same at the end of a long reply as at its start.
// They keep their place because blocks are placed here rather than by a Column (which closes the
// gap of a hidden item). The blocks in view are found by binary search and only those that enter
// or leave it change.
Item {
    id: area
    property MessageBlocks blocks: null
    property bool reasoningVisible: true
    property color linkColor
    property int fontSize: 14
    property int spacing: 8
    property ListView view: null  // the list the message is in
    property real originY: 0  // this item's top in the view's content
    property int shownFrom: 0
    property int shownTo: -1

    function updateShown() {
        const n = blockRepeater.count
        if (n > 0 && !blockRepeater.itemAt(n - 1)) {
            Qt.callLater(area.updateShown)  // the Repeater is still making the blocks
            return
        }
        let from = 0, to = n - 1
        if (view && n > 0) {
            const low = view.contentY - originY - 200
            const high = view.contentY + view.height - originY + 200
            let a = 0, b = n
            while (a < b) {
                const m = (a + b) >> 1, it = blockRepeater.itemAt(m)
                if (it.y + it.height < low) a = m + 1; else b = m
            }
            let c = a, d = n
            while (c < d) {
                const m = (c + d) >> 1
                if (blockRepeater.itemAt(m).y <= high) c = m + 1; else d = m
            }
            from = a
            to = c - 1
        }
        const setShown = (i, shown) => {
            const it = blockRepeater.itemAt(i)
            if (it) it.inView = shown
        }
        for (let i = shownFrom; i <= Math.min(shownTo, n - 1); ++i)
            if (i < from || i > to) setShown(i, false)
        for (let i = from; i <= to; ++i)
            if (i < shownFrom || i > shownTo) setShown(i, true)
        shownFrom = from
        shownTo = to
    }
    // Places blocks [first, end) below each other (a block of no height takes no room), and
    // sizes this item to them. A streamed batch changes the last block's height, so only it is
    // placed again; a change further up (a resize, reasoning folded) places the rest once, later
    // in this event loop pass.
    property int placePending: -1
    function place(first) {
        if (blockRepeater.count - first <= 4) {
            placeNow(first)
        } else {
            placePending = placePending < 0 ? first : Math.min(placePending, first)
            Qt.callLater(area.placeLater)
        }
    }
    function placeLater() {
        const first = placePending
        placePending = -1
        if (first >= 0) placeNow(first)
    }
    function placeNow(first) {
        const n = blockRepeater.count
        const gap = spacing
        let i = Math.max(0, Math.min(first, n))
        let next = 0  // where block i goes
        if (i > 0) {
            const prev = blockRepeater.itemAt(i - 1)
            next = prev.y + (prev.height > 0 ? prev.height + gap : 0)
        }
        for (; i < n; ++i) {
            const it = blockRepeater.itemAt(i)
            if (!it) break  // not made yet: placed when it is added
            it.y = next
            next += it.height > 0 ? it.height + gap : 0
        }
        height = next > 0 ? next - gap : 0
        updateShown()
    }
    Connections {
        target: area.view
        function onContentYChanged() { area.updateShown() }
        function onHeightChanged() { area.updateShown() }
    }
    onOriginYChanged: updateShown()

    Repeater {
        id: blockRepeater
        model: area.blocks
        onItemAdded: (i) => area.place(i)
        onItemRemoved: (i) => area.place(i)
        delegate: MarkdownBlock {
            id: block
            width: area.width
            reasoningVisible: area.reasoningVisible
            highlighter: area.blocks
            linkColor: area.linkColor
            fontSize: area.fontSize
            onHeightChanged: area.place(block.index)
        }
    }
}
