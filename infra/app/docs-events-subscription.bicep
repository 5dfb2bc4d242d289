// The subscription that sends each write of a site's search index to the refresh queue in the host storage: the
// queue trigger maps the blob to its site and refreshes it (Forge__Documentation__Refresh__QueueName). Created after
// the topic's identity may send to the queue (app/queue-sender.bicep), so the first events are not refused.
@description('The docs storage account\'s system topic (app/docs-events.bicep), in this resource group.')
param systemTopicName string
param name string
@description('Blob container the documentation is published to ($web for a static website).')
param containerName string
@description('Forge__Documentation__SearchIndexPath: a blob whose name ends with it is a site\'s search index.')
param indexPath string
@description('Resource id of the host storage account, which holds the queue.')
param queueStorageAccountId string
param queueName string

resource topic 'Microsoft.EventGrid/systemTopics@2025-02-15' existing = {
  name: systemTopicName
}

// A blob event's subject is /blobServices/default/containers/<container>/blobs/<blob name>: only new or overwritten
// search indexes of that container pass, not the thousands of pages a publish writes beside them.
resource subscription 'Microsoft.EventGrid/systemTopics/eventSubscriptions@2025-02-15' = {
  parent: topic
  name: name
  properties: {
    eventDeliverySchema: 'EventGridSchema'
    filter: {
      includedEventTypes: [
        'Microsoft.Storage.BlobCreated'
      ]
      subjectBeginsWith: '/blobServices/default/containers/${containerName}/blobs/'
      subjectEndsWith: indexPath
    }
    // Delivered as the topic's system-assigned identity: no key or SAS, and past the host storage's firewall
    // (trusted-service access) when it has one.
    deliveryWithResourceIdentity: {
      identity: {
        type: 'SystemAssigned'
      }
      destination: {
        endpointType: 'StorageQueue'
        properties: {
          resourceId: queueStorageAccountId
          queueName: queueName
        }
      }
    }
  }
}
